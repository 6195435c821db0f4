"""Settings that admins change while the server runs: retrieval, reranking, chunking and the
prompts. Everything else is read once at start-up.

The effective settings are one immutable handle (``Tuned``): the start-up settings with the
changes kept in the database laid over them. Each search, chat and ingested file reads the
handle once, so a change takes effect from the next request on and never halfway through one.
Other processes on the same database pick a change up within ``refresh_seconds``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from citewell.catalog.kb_settings import NO_SETTINGS, KnowledgeSettings
from citewell.catalog.runtime import RuntimeSettingsStore
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.enrich import CONTEXT_PROMPT, SUMMARY_PROMPT, EnrichConfig
from citewell.errors import CitewellError, ConfigError, InvalidInput
from citewell.rerankers import build_reranker
from citewell.retrieval import Ranking, RetrievalSettings
from citewell.splitters import Splitter, build_splitter
from citewell.types import SearchMode

log = logging.getLogger(__name__)

# Which settings are which is each field's metadata (config.fields.Scopes).
# Which settings are which is each field's metadata (config.fields.Scopes).
# What a knowledge base may set for itself (its files are split and indexed with them).
KB_CHUNKING = Settings.names_where(kb_files=True)
# What may change without a restart; the rest (storage, models, limits, auth) may not.
RUNTIME_SETTINGS = Settings.names_where(runtime=True)
# Open WebUI's names in GET/POST /api/v1/retrieval/config (and its task config) → ours.
OPEN_WEBUI_NAMES = {
    "RAG_TEMPLATE": "rag_template",
    "TOP_K": "top_k",
    "RAG_FULL_CONTEXT": "rag_full_context",
    "ENABLE_RAG_HYBRID_SEARCH": "hybrid_search",
    "TOP_K_RERANKER": "top_k_reranker",
    "RELEVANCE_THRESHOLD": "relevance_threshold",
    "HYBRID_BM25_WEIGHT": "hybrid_bm25_weight",
    "RAG_RERANKING_ENGINE": "reranker",
    "RAG_RERANKING_MODEL": "reranking_model",
    "RAG_EXTERNAL_RERANKER_URL": "reranker_url",
    "RAG_EXTERNAL_RERANKER_API_KEY": "reranker_api_key",
    "TEXT_SPLITTER": "text_splitter",
    "CHUNK_SIZE": "chunk_size",
    "CHUNK_OVERLAP": "chunk_overlap",
    "ENABLE_RETRIEVAL_QUERY_GENERATION": "enable_retrieval_query_generation",
    "QUERY_GENERATION_PROMPT_TEMPLATE": "query_generation_prompt_template",
}


def retrieval_settings(settings: Settings) -> RetrievalSettings:
    return RetrievalSettings(
        candidate_k=settings.retrieval.candidate_k,
        fusion=settings.retrieval.fusion,
        rrf_k=settings.retrieval.rrf_k,
        bm25_weight=settings.retrieval.hybrid_bm25_weight,
        relevance_threshold=settings.retrieval.relevance_threshold,
        top_k_reranker=settings.reranking.top_k_reranker,
        stemmer=settings.retrieval.bm25_stemmer,
    )


def needs_llm(has_llm: bool, settings: Settings) -> None:
    if not has_llm and (
        settings.enrichment.contextual_chunks or settings.enrichment.document_summary
    ):
        raise ConfigError(
            "contextual_chunks and document_summary need an LLM to write contexts and "
            "summaries: set llm_base_url (an OpenAI-compatible server or Ollama) or "
            "llm_model_path, or turn them off."
        )


def enrich_config(settings: Settings) -> EnrichConfig:
    return EnrichConfig(
        contexts=settings.enrichment.contextual_chunks,
        summary=settings.enrichment.document_summary,
        context_prompt=settings.enrichment.contextual_prompt or CONTEXT_PROMPT,
        summary_prompt=settings.enrichment.summary_prompt or SUMMARY_PROMPT,
        model=settings.enrichment.contextual_model or settings.llm.llm_model,
        document_tokens=settings.enrichment.contextual_document_tokens,
        concurrency=settings.enrichment.contextual_concurrency,
    )


def default_mode(settings: Settings) -> SearchMode:
    return SearchMode.HYBRID if settings.retrieval.hybrid_search else SearchMode.VECTOR


def kb_ranking(ranking: Ranking, own: KnowledgeSettings) -> Ranking:
    """The server's ranking with a KB's own candidate pool, BM25 weight and reranker choice."""
    if own == NO_SETTINGS:
        return ranking
    settings = ranking.settings
    if own.candidate_k is not None:
        settings = replace(settings, candidate_k=own.candidate_k)
    if own.hybrid_bm25_weight is not None:
        settings = replace(settings, bm25_weight=own.hybrid_bm25_weight)
    reranker = None if own.rerank is False else ranking.reranker
    return Ranking(settings, reranker)


@dataclass(frozen=True)
class Tuned:
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
        self._current = Tuned(start, Ranking(retrieval_settings(start), build_reranker(start)))
        self._splitters: dict[tuple[Any, ...], Splitter] = {}
        self._apply(self._load(), quiet=True)

    @property
    def current(self) -> Tuned:
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
            tuned = self._build({**kept, **local})
            if persist and self._store is not None:
                self._store.save(new, user_id)
            self._kept, self._local, self._current = kept, local, tuned
            self._checked = time.monotonic()
            return sorted(new)

    def reset(self, names: Collection[str] | None = None) -> Tuned:
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

    def _apply(self, kept: dict[str, Any], quiet: bool) -> Tuned:
        with self._lock:
            try:
                tuned = self._build({**kept, **self._local})
            except CitewellError as exc:
                if not quiet:
                    raise
                # A kept value that no longer validates (an upgrade, a removed model) must not
                # stop the server: the start-up values stand until an admin fixes it.
                log.warning("Ignoring the settings changed at run time: %s", exc)
                tuned = self._build({})
            self._kept, self._current = kept, tuned
            return tuned

    def _build(self, changes: Mapping[str, Any]) -> Tuned:
        settings = self._merged(changes)
        if self._validate is not None:
            self._validate(settings)
        previous = self._current
        reranker = previous.ranking.reranker
        if settings.reranking != previous.settings.reranking:
            reranker = build_reranker(settings)
        return Tuned(settings, Ranking(retrieval_settings(settings), reranker), dict(changes))

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


def check_kb_chunking(own: Mapping[str, Any]) -> None:
    unknown = sorted(set(own) - set(KB_CHUNKING))
    if unknown:
        raise InvalidInput(
            f"{', '.join(unknown)} cannot be set per knowledge base; its chunking may set "
            f"{', '.join(KB_CHUNKING)}."
        )


READ_ONLY_KEYS = ("status", "changed", "start")  # in GET's answer; a client may post it back
MASK = "********"


def runtime_changes(body: Mapping[str, Any]) -> dict[str, Any]:
    """Changes named by Open WebUI's keys (``TOP_K``) or Citewell's (``top_k``), also nested
    under ``settings`` as GET /api/v1/retrieval/config shows them. A masked secret posted
    back unchanged is no change."""
    changes: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in body.items():
        if key == "settings" and isinstance(value, Mapping):
            changes.update(runtime_changes(value))
        elif key in READ_ONLY_KEYS:
            continue
        elif key in OPEN_WEBUI_NAMES or key in RUNTIME_SETTINGS:
            changes[OPEN_WEBUI_NAMES.get(key, key)] = value
        else:
            unknown.append(key)
    if unknown:
        raise InvalidInput(
            f"Unknown or fixed settings: {', '.join(sorted(unknown))}. These change at run "
            f"time: {', '.join(RUNTIME_SETTINGS)} (or Open WebUI's "
            f"{', '.join(OPEN_WEBUI_NAMES)}); the rest are set at start-up."
        )
    return {k: v for k, v in changes.items() if not (k.endswith("_api_key") and v == MASK)}
