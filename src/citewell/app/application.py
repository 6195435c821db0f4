"""``Citewell``: what the HTTP API, the CLI and library users hold. The engine (ingestion,
search, operations) with answering on top, built once from the settings."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

from citewell.app.assemble import Parts
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.engine.core import Engine
from citewell.llm.base import LLM

if TYPE_CHECKING:
    from citewell.answer.chat import ChatPipeline
    from citewell.auth.identity.methods import IdentityMethods
    from citewell.auth.rate_limit import RateLimiter


class Citewell(Engine):
    """The application object adapters and library users hold: the engine with answering
    (``chat``), the account stores, sign-in methods and rate limiter, all built here."""

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
        live, catalog, storage, spaces = parts.live, parts.catalog, parts.storage, parts.spaces
        return cls(live, catalog, storage, spaces, parts.retriever, parts.accounts, llm=parts.llm)

    def warm(self) -> None:
        """Open the chunk tables, load the embedding model and, in the background, what
        searches read, as a serving process does at start. A command opens the tables on
        first use and never loads indexes it does not search."""
        self.spaces.warm()
        self.spaces.warm_searches()

    @cached_property
    def identity(self) -> IdentityMethods:
        """The sign-in methods the settings turn on (a wrong setting fails here, saying
        which): built on first use, so commands that sign no one in skip them."""
        from citewell.auth.identity.methods import identity_methods

        start = self.live.start
        return identity_methods(start.identity, start.server.public_url, self.accounts.users)

    @cached_property
    def rate_limiter(self) -> RateLimiter:
        """Requests a minute per user: shared through the database when other processes
        serve the same keys."""
        from citewell.auth.rate_limit import rate_limiter

        return rate_limiter(self.live.start, self.catalog.engine)

    @cached_property
    def chat(self) -> ChatPipeline:
        """Answers with sources: the configured LLM (or extractive), presets and tools.
        Imported on first use: commands that answer nothing skip the answering stack."""
        from citewell.answer.chat import ChatPipeline
        from citewell.catalog.preset import parse_presets
        from citewell.catalog.presets import PresetStore

        configured = parse_presets(self.settings.answering.model_presets)
        stored = PresetStore(self.catalog.engine)
        return ChatPipeline(self.live, self.measure, self.llm, configured, stored)
