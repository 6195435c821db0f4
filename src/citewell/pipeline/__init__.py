"""The only place that knows the order of the steps: ingest and search (core), chat (chat)."""

from citewell.pipeline.chunk_rows import embed_text, sha256, space_table
from citewell.pipeline.core import Citewell
from citewell.pipeline.ingest import Ingestor
from citewell.pipeline.ingest_types import IngestProgress, ProgressCallback

__all__ = [
    "Citewell",
    "IngestProgress",
    "Ingestor",
    "ProgressCallback",
    "embed_text",
    "sha256",
    "space_table",
]
