"""The benchmarks BENCHMARKS.md cites, each run from the repository root as
``.venv/bin/python -m benchmarks.NAME``; ``lab/`` holds the one-off probes the journal
(docs/benchmarks/journal.md) cites, run as ``-m benchmarks.lab.NAME``."""
