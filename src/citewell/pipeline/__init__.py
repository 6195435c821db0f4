"""The only place that knows the order of the steps: ingest and search (core), chat (chat)."""

from citewell.pipeline.core import Citewell
from citewell.pipeline.ingest import (
    Ingestor,
    IngestProgress,
    ProgressCallback,
    embed_text,
    sha256,
    space_table,
)

__all__ = [
    "Citewell",
    "IngestProgress",
    "Ingestor",
    "ProgressCallback",
    "embed_text",
    "sha256",
    "space_table",
]
