"""One-off probes: each answered a question the journal (docs/benchmarks/journal.md)
records; kept so its figures can be produced again (``-m benchmarks.lab.NAME``)."""
