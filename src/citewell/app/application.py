"""``Citewell``: what the HTTP API, the CLI and library users hold. The engine (ingestion,
search, operations) with answering on top, built once from the settings."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from citewell.answer.chat import ChatPipeline
from citewell.app.assemble import Parts
from citewell.catalog.preset import parse_presets
from citewell.catalog.presets import PresetStore
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.engine.core import Engine
from citewell.llm.base import LLM


class Citewell(Engine):
    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        embedder: Embedder | None = None,
        previous: Sequence[Embedder] = (),
        switch_models: bool = True,
        llm: LLM | None = None,
    ) -> Citewell:
        """``embedder`` replaces the one the settings name; ``previous`` are embedders of
        earlier embedding spaces that the kept settings cannot rebuild (tests use both).
        ``switch_models``: settings naming another embedding model start re-embedding into
        it (the server and workers); without, the data dir's active model is used as is.
        ``llm`` replaces the one the settings name."""
        parts = Parts.build(settings, embedder, previous, switch_models, llm)
        return cls(
            parts.live, parts.catalog, parts.storage, parts.spaces, parts.retriever, llm=parts.llm
        )

    @cached_property
    def chat(self) -> ChatPipeline:
        """Answers with sources: the configured LLM (or extractive), presets and tools."""
        configured = parse_presets(self.settings.answering.model_presets)
        return ChatPipeline(self, self.llm, configured, PresetStore(self.catalog.engine))
