"""What an ingest would take, found without storing or embedding anything."""

from __future__ import annotations

from collections.abc import Sequence

from citewell.enrich import EnrichCost
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.types import IngestEstimate
from citewell.sources import SourceItem


def estimate_ingest(
    ingestor: Ingestor,
    items: Sequence[SourceItem],
    use_cache: bool = True,
    kb_id: str | None = None,
) -> IngestEstimate:
    """Parse and split ``items`` as ``kb_id`` would (its own chunking; the server's without
    one) and count the LLM work that contextual_chunks and document_summary would add."""
    if kb_id is not None:
        targets = ingestor.sets.targets(kb_id, ingestor.embedder)
        plans = [(t.splitter, t.enricher) for t in targets]
    else:
        plans = [(ingestor.splitter, ingestor.enricher())]
    chunks, cost = 0, EnrichCost()
    for item in items:
        document = ingestor.reader.read(item.read(), item.reader_name or item.name)
        for splitter, enricher in plans:
            split = [c for c in splitter.split(document) if c.text.strip()]
            chunks += len(split)
            cost += enricher.estimate(document.text, split, use_cache)
    return IngestEstimate(len(items), chunks, cost)
