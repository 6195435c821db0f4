"""The three layers of settings, named once:

- the **start-up settings** (``LiveSettings.start``): read once from the environment, the
  config file and keyword arguments (``citewell.config``);
- the **run-time changes** admins keep in the database (``catalog.runtime.
  RuntimeSettingsStore``; ``SettingsInForce.changed``);
- the **settings in force** (``LiveSettings.settings``, ``Engine.settings``): the start-up
  settings with the run-time changes laid over them, one immutable handle
  (``SettingsInForce``) that each search, chat and ingested file reads once, so a change
  takes effect from the next request on and never halfway through one. Other processes on
  the same database pick a change up within ``refresh_seconds``.

What a request, a preset or a KB may override on top is ``config.resolve``'s."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from citewell.catalog.runtime import RuntimeSettingsStore
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.errors import CitewellError, InvalidInput
from citewell.live_settings.built import retrieval_settings
from citewell.live_settings.names import RUNTIME_SETTINGS, check_kb_chunking
from citewell.rerankers import build_reranker
from citewell.retrieval import Ranking
from citewell.splitters import Splitter, build_splitter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SettingsInForce:
    """The effective settings and what is built from them, read once per operation."""

    settings: Settings
    ranking: Ranking
    changed: Mapping[str, Any] = field(default_factory=dict)  # set at run time: name → value


class LiveSettings:
    """The start-up settings, with run-time changes from ``store`` (None: none are kept)."""

    def __init__(
        self,
        start: Settings,
        store: RuntimeSettingsStore | None = None,
        refresh_seconds: float = 2.0,
        validate: Callable[[Settings], None] | None = None,
    ) -> None:
        """``validate`` raises a CitewellError for settings this application cannot run
        with (say, contextual chunks without an LLM), before a change is kept."""
        self.start = start
        self._validate = validate
        self._store = store
        self._refresh_seconds = refresh_seconds
        self._lock = threading.Lock()
        self._local: dict[str, Any] = {}  # this process only (benchmarks, tests)
        self._kept: dict[str, Any] = {}
        self._checked = time.monotonic()
        self._current = SettingsInForce(
            start, Ranking(retrieval_settings(start), build_reranker(start))
        )
        self._splitters: dict[tuple[Any, ...], Splitter] = {}
        self._apply(self._load(), quiet=True)

    @property
    def current(self) -> SettingsInForce:
        """The handle now in force; re-read from the database at most every refresh_seconds."""
        if self._store is not None and time.monotonic() - self._checked > self._refresh_seconds:
            self.refresh()
        return self._current

    @property
    def settings(self) -> Settings:
        return self.current.settings

    def refresh(self) -> None:
        self._checked = time.monotonic()
        kept = self._load()
        if kept != self._kept:
            self._apply(kept, quiet=True)

    # --- changing -----------------------------------------------------------------------
    def update(
        self, changes: Mapping[str, Any], user_id: str = "", persist: bool = True
    ) -> list[str]:
        """Validate ``changes`` against every other setting, build what they need (a
        reranker), then keep those that differ from the values in force: in the database
        with ``persist`` (every process, across restarts), else in this process only.
        Nothing is kept when any of them is invalid. Returns the names that changed."""
        unknown = sorted(set(changes) - set(RUNTIME_SETTINGS))
        if unknown:
            raise InvalidInput(
                f"{', '.join(unknown)} cannot be changed while the server runs; set "
                "it in the environment or config file and restart. These can: "
                f"{', '.join(RUNTIME_SETTINGS)}."
            )
        with self._lock:
            now = self._current.settings
            wanted = self._merged({**self._current.changed, **changes})
            dumped = wanted.flat(mode="json")
            new = {n: dumped[n] for n in changes if wanted.value(n) != now.value(n)}
            if not new:
                return []
            kept = {**self._kept, **new} if persist else self._kept
            local = self._local if persist else {**self._local, **new}
            in_force = self._build({**kept, **local})
            if persist and self._store is not None:
                self._store.save(new, user_id)
            self._kept, self._local, self._current = kept, local, in_force
            self._checked = time.monotonic()
            return sorted(new)

    def reset(self, names: Collection[str] | None = None) -> SettingsInForce:
        """Back to the start-up values: of ``names``, or of every setting changed."""
        unknown = sorted(set(names or ()) - set(RUNTIME_SETTINGS))
        if unknown:
            raise InvalidInput(
                f"{', '.join(unknown)} are not settings that change at run time; these are: "
                f"{', '.join(RUNTIME_SETTINGS)}."
            )
        with self._lock:
            if self._store is not None:
                self._store.reset(names)
            self._local = {k: v for k, v in self._local.items() if names and k not in names}
        return self._apply(self._load(), quiet=False)

    # --- building -----------------------------------------------------------------------
    def _load(self) -> dict[str, Any]:
        if self._store is None:
            return {}
        return {k: v for k, v in self._store.load().items() if k in RUNTIME_SETTINGS}

    def _apply(self, kept: dict[str, Any], quiet: bool) -> SettingsInForce:
        with self._lock:
            try:
                in_force = self._build({**kept, **self._local})
            except CitewellError as exc:
                if not quiet:
                    raise
                # A kept value that no longer validates (an upgrade, a removed model) must not
                # stop the server: the start-up values stand until an admin fixes it.
                log.warning("Ignoring the settings changed at run time: %s", exc)
                in_force = self._build({})
            self._kept, self._current = kept, in_force
            return in_force

    def _build(self, changes: Mapping[str, Any]) -> SettingsInForce:
        settings = self._merged(changes)
        if self._validate is not None:
            self._validate(settings)
        previous = self._current
        reranker = previous.ranking.reranker
        if settings.reranking != previous.settings.reranking:
            reranker = build_reranker(settings)
        return SettingsInForce(
            settings, Ranking(retrieval_settings(settings), reranker), dict(changes)
        )

    def _merged(self, changes: Mapping[str, Any]) -> Settings:
        return self.start.with_values(changes)

    def splitter_for(self, embedder: Embedder, settings: Settings | None = None) -> Splitter:
        """The splitter that the chunking settings in force (or ``settings``: a KB's own)
        make with ``embedder`` (its tokenizer measures sizes, the semantic splitters use its
        vectors); built once per distinct chunking."""
        settings = settings or self.current.settings
        key = (embedder.model_id, id(embedder), repr(settings.chunking))
        splitter = self._splitters.get(key)
        if splitter is None:
            splitter = build_splitter(settings, embedder)
            if len(self._splitters) >= 16:  # old chunkings are rarely wanted again
                self._splitters = {}
            self._splitters[key] = splitter
        return splitter

    def chunking(self, own: Mapping[str, Any]) -> Settings:
        """The settings a KB's files are split with: the server's now, with the KB's own
        chunking settings (``own``) laid over them and checked like any change."""
        check_kb_chunking(own)
        if not own:
            return self.current.settings
        current = self.current
        merged = self._merged({**current.changed, **own})
        if self._validate is not None:
            self._validate(merged)
        return merged
