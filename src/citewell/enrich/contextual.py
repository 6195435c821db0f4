"""Contextual retrieval (seed 002) and document summaries (seed 001): text an LLM writes
about a chunk or a document, embedded and indexed with the chunk but never shown as its text
or counted in its offsets. Every text is cached by what made it, so the same document costs
its LLM calls once."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from citewell.enrich.cache import SUMMARY, ContextCache, context_key, text_hash
from citewell.enrich.enrichment import Enrichment
from citewell.errors import ConfigError
from citewell.llm.base import LLM, ChatMessage
from citewell.types import Chunk

# Seed 002's prompt (Anthropic's Contextual Retrieval), as the seed gives it.
CONTEXT_PROMPT = """<document>
{{WHOLE_DOCUMENT}}
</document>
Here is the chunk we want to situate within the whole document
<chunk>
{{CHUNK_CONTENT}}
</chunk>
Please give a short succinct context to situate this chunk within the overall document for \
the purposes of improving search retrieval of the chunk. Answer only with the succinct \
context and nothing else."""

SUMMARY_PROMPT = """<document>
{{WHOLE_DOCUMENT}}
</document>
Summarise this document in two or three sentences: what it is, its subject and its main \
points, naming the entities it is about. Answer only with the summary."""

CHARS_PER_TOKEN = 4  # prompts are sized before any LLM tokenizer is at hand
MAX_CONTEXT_TOKENS = 150  # a context or summary is a few sentences


@dataclass(frozen=True)
class EnrichConfig:
    contexts: bool
    summary: bool
    context_prompt: str
    summary_prompt: str
    model: str
    document_tokens: int
    concurrency: int


@dataclass(frozen=True)
class EnrichCost:
    """The LLM work ingesting some documents would take, before any of it is done."""

    llm_calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0  # estimated at 4 characters a token

    def __add__(self, other: EnrichCost) -> EnrichCost:
        return EnrichCost(
            self.llm_calls + other.llm_calls,
            self.cached + other.cached,
            self.prompt_tokens + other.prompt_tokens,
        )


def document_window(text: str, start: int, end: int, tokens: int) -> str:
    """The document, or, when it is longer than ``tokens``, the part of it around
    ``start``..``end`` (a chunk) that fits."""
    room = tokens * CHARS_PER_TOKEN
    if len(text) <= room:
        return text
    middle = (start + end) // 2
    begin = max(0, min(middle - room // 2, len(text) - room))
    return text[begin : begin + room]


def render(prompt: str, document: str, chunk: str = "") -> str:
    return prompt.replace("{{WHOLE_DOCUMENT}}", document).replace("{{CHUNK_CONTENT}}", chunk)


class Enricher:
    """Writes (or finds) a document's summary and its chunks' contexts."""

    def __init__(self, llm: LLM | None, cache: ContextCache, config: EnrichConfig) -> None:
        if llm is None and (config.contexts or config.summary):
            raise ConfigError(
                "contextual_chunks and document_summary need an LLM: set llm_base_url "
                "(OpenAI-compatible or Ollama) or llm_model_path, or turn them off."
            )
        self.llm = llm
        self.cache = cache
        self.config = config
        self._model = config.model

    def model(self) -> str:
        """The configured model, else the LLM's first (asked once)."""
        if not self._model and self.llm is not None:
            names = self.llm.models()
            if not names:
                raise ConfigError(
                    "Set contextual_model (or llm_model): the LLM lists no models to write "
                    "chunk contexts with."
                )
            self._model = names[0]
        return self._model

    @property
    def active(self) -> bool:
        return self.config.contexts or self.config.summary

    def _jobs(self, text: str, chunks: Sequence[Chunk]) -> dict[tuple[str, str], str]:
        """(key, chunk hash) → prompt, for each text this document needs."""
        config, doc_hash, model = self.config, text_hash(text), self.model()
        jobs: dict[tuple[str, str], str] = {}
        if config.summary:
            key = context_key(doc_hash, SUMMARY, config.summary_prompt, model)
            window = document_window(text, 0, 0, config.document_tokens)
            jobs[(key, SUMMARY)] = render(config.summary_prompt, window)
        if config.contexts:
            for chunk in chunks:
                chunk_hash = text_hash(chunk.text)
                key = context_key(doc_hash, chunk_hash, config.context_prompt, model)
                window = document_window(text, chunk.start, chunk.end, config.document_tokens)
                jobs[(key, chunk_hash)] = render(config.context_prompt, window, chunk.text)
        return jobs

    def estimate(self, text: str, chunks: Sequence[Chunk], use_cache: bool = True) -> EnrichCost:
        """The LLM calls ingesting this document would make. Without ``use_cache`` every
        call is counted: whether another user's ingestion cached this text is theirs to know."""
        if not self.active:
            return EnrichCost()
        jobs = self._jobs(text, chunks)
        cached = self.cache.get([key for key, _ in jobs]) if use_cache else {}
        todo = [prompt for (key, _), prompt in jobs.items() if key not in cached]
        tokens = sum(len(p) for p in todo) // CHARS_PER_TOKEN
        return EnrichCost(len(todo), len(cached), tokens)

    def enrich(self, text: str, chunks: Sequence[Chunk]) -> Enrichment:
        """The summary and contexts: from the cache, else written by the LLM (and kept)."""
        if not self.active:
            return Enrichment()
        jobs = self._jobs(text, chunks)
        found = self.cache.get([key for key, _ in jobs])
        todo = {job: prompt for job, prompt in jobs.items() if job[0] not in found}
        written = self._write(todo)
        self.cache.put(text_hash(text), written, self.model())
        found.update({key: value for (key, _), value in written.items()})
        by_hash = {chunk_hash: found[key] for key, chunk_hash in jobs}
        return Enrichment(
            summary=by_hash.get(SUMMARY, ""),
            contexts=tuple(by_hash.get(text_hash(c.text), "") for c in chunks)
            if self.config.contexts
            else (),
        )

    def _write(self, todo: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
        if not todo:
            return {}
        workers = min(self.config.concurrency, len(todo))
        with ThreadPoolExecutor(workers, thread_name_prefix="citewell-context") as pool:
            texts = list(pool.map(self._ask, todo.values()))
        return dict(zip(todo, texts, strict=True))

    def _ask(self, prompt: str) -> str:
        assert self.llm is not None
        options = {"temperature": 0, "max_tokens": MAX_CONTEXT_TOKENS}
        reply = self.llm.complete(self.model(), [ChatMessage("user", prompt)], options)
        return " ".join(reply.text.split())


def stored_enrichment(cache: ContextCache, text_sha: str, chunk_texts: Sequence[str]) -> Enrichment:
    """What these chunks of a document were indexed with, from the cache alone (no LLM):
    for re-embedding them into another embedding space."""
    hashes = [text_hash(t) for t in chunk_texts]
    kept = cache.latest(text_sha, {*hashes, SUMMARY})
    if not kept:
        return Enrichment()
    return Enrichment(kept.get(SUMMARY, ""), tuple(kept.get(h, "") for h in hashes))
