"""When a chunk table gets an approximate vector index, of how many partitions, and how many
of them a search probes. Every backend and the in-memory copies follow the same policy."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class VectorIndexPolicy:
    min_rows: int = 50_000  # below this, search is exact and in memory
    min_probes: int = 16
    probe_factor: float = 2.5
    max_deltas: int = 8
    # Rows outside the vector index are searched flat beside it: at a million rows, up to
    # 6,400 of them left searches within noise of none (29 +- 3 ms). An IVF delta costs
    # ~0.18 s plus 0.085 ms a row there (0.25 s for 1,024 rows, 0.52 s for 4,096), so
    # fewer, larger ones cost less per row, and Lance 9 leaves a file open for each.
    vector_delta_rows: int = 4096
    # The full-text and scalar indexes take rows in deltas of at least this many (searched
    # flat meanwhile). A full-text delta's cost grows with the index, not only the rows:
    # 0.13-0.49 s for 256 rows at ten million chunks against 0.025 s at 10,000, so that a
    # 256-chunk write cost 2.9x as much there; one delta per four such writes shares it.
    index_delta_rows: int = 1024
    # A vector or full-text delta costs more the bigger the index, whatever its rows: at ten
    # million chunks 0.9-1.0 s for 4,096 vectors (3,162 partitions) and 0.15-0.25 s for
    # 1,024 rows' terms, with a merge of segments after every other one. Past a million
    # rows the full-text index also waits for a thousandth of the rows it holds, and the
    # vector index for a 250th (10,000 and 40,000 rows at ten million; a flat scan of
    # 40,000 vectors costs a LanceDB search about 20 ms, and big tables are searched in the
    # machine's copy). The key indexes keep index_delta_rows: every write looks ids up in
    # them, and the fragments they cover are not compacted again.
    text_delta_share: int = 1000
    vector_delta_share: int = 250

    def delta_rows(self, indexed: int, vector: bool) -> int:
        """New rows the vector or full-text index waits for before it takes them in."""
        floor, share = (
            (self.vector_delta_rows, self.vector_delta_share)
            if vector
            else (self.index_delta_rows, self.text_delta_share)
        )
        return max(1, floor, indexed // max(1, share))

    def partitions(self, rows: int) -> int:
        """About sqrt(rows) partitions: ~1,000 of ~1,000 rows each at a million."""
        return max(1, round(math.sqrt(rows)))

    def nprobes(self, rows: int, matching: int) -> int:
        """Partitions to probe for a search among ``matching`` of ``rows`` rows.

        2.5 x sqrt(partitions) for the whole table (80 of 1,000 at a million; 2 x gave
        recall@50 0.97 there but 0.949 at 60,000 rows). A filter that keeps few rows needs
        more, since the nearest rows *it keeps* lie further out: (rows / matching) ** (1/4)
        times as many, 143 probes for a 10 % filter and 253 for 1 % at a million. Measured
        there: 120 probes gave a 10 % filter recall@50 0.965, 250 a 1 % one 0.971 (an older
        index layout) and 0.986-0.987 on four 1 % KBs later, 16-20 % faster than the cube
        root's 353-407 probes (0.989-0.991); a fifth root, 195-213 probes, gave 0.981-0.984
        but single queries down to 0.66."""
        partitions = self.partitions(rows)
        base = max(self.min_probes, math.ceil(self.probe_factor * math.sqrt(partitions)))
        spread = (rows / max(1, min(rows, matching))) ** (1 / 4)
        return min(partitions, int(math.ceil(base * spread)))
