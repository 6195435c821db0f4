"""What an LLM wrote about one document, put in front of its chunks: a module of its own so
that splitting a file (in a reader's worker process) does not import the LLM clients and
the cache's database."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Enrichment:
    """What goes in front of each chunk of one document for embedding and BM25."""

    summary: str = ""
    contexts: tuple[str, ...] = ()

    def prefix(self, index: int) -> str:
        context = self.contexts[index] if index < len(self.contexts) else ""
        parts = [f"Summary: {self.summary}" if self.summary else "", context]
        return "\n\n".join(p for p in parts if p)
