"""The Enricher: chunk contexts and document summaries, written once per (document, chunk,
prompt, model) and kept for re-embedding."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import create_engine

from citewell.app import Citewell
from citewell.config import Settings
from citewell.enrich import (
    CONTEXT_PROMPT,
    SUMMARY_PROMPT,
    ContextCache,
    EnrichConfig,
    Enricher,
    stored_enrichment,
)
from citewell.enrich.contextual import document_window
from citewell.ingest.chunk_rows import embed_text
from citewell.llm.base import ChatMessage, Completion, Delta
from citewell.stores.base import scanning
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import Chunk, ChunkFilter


class CountingLLM:
    """An in-process LLM that names the chunk it was asked about (and counts the calls)."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion:
        prompt = messages[-1].content
        self.prompts.append(prompt)
        if "<chunk>" in prompt:
            chunk = prompt.split("<chunk>")[1].split("</chunk>")[0].strip()
            return Completion(f"Context of {chunk[:12]!r} by {model}.")
        return Completion("A summary.")

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]:
        yield Delta(self.complete(model, messages, options).text, "stop")

    def models(self) -> list[str]:
        return ["tiny"]


def config(**changes: Any) -> EnrichConfig:
    values = {
        "contexts": True,
        "summary": True,
        "context_prompt": CONTEXT_PROMPT,
        "summary_prompt": SUMMARY_PROMPT,
        "model": "tiny",
        "document_tokens": 1000,
        "concurrency": 3,
    }
    return EnrichConfig(**{**values, **changes})


@pytest.fixture
def cache(tmp_path):
    return ContextCache(create_engine(f"sqlite:///{tmp_path / 'db.sqlite'}"))


TEXT = "Alpha paragraph. " * 10 + "Beta paragraph. " * 10
CHUNKS = [Chunk("Alpha paragraph. " * 10, 0, 170), Chunk("Beta paragraph. " * 10, 170, 330)]


def test_each_chunk_gets_its_own_context_and_the_document_one_summary(cache):
    llm = CountingLLM()
    found = Enricher(llm, cache, config()).enrich(TEXT, CHUNKS)
    assert found.summary == "A summary."
    assert found.contexts == (
        "Context of 'Alpha paragr' by tiny.",
        "Context of 'Beta paragra' by tiny.",
    )
    assert found.prefix(1) == "Summary: A summary.\n\nContext of 'Beta paragra' by tiny."
    assert len(llm.prompts) == 3


def test_written_once_per_document_chunk_prompt_and_model(cache):
    llm = CountingLLM()
    Enricher(llm, cache, config()).enrich(TEXT, CHUNKS)
    Enricher(llm, cache, config()).enrich(TEXT, CHUNKS)
    assert len(llm.prompts) == 3  # the second time, all from the cache
    Enricher(llm, cache, config(model="other")).enrich(TEXT, CHUNKS)
    assert len(llm.prompts) == 6
    Enricher(llm, cache, config(context_prompt=CONTEXT_PROMPT + " Be brief.")).enrich(TEXT, CHUNKS)
    assert len(llm.prompts) == 8  # new contexts; the summary prompt did not change
    Enricher(llm, cache, config()).enrich(TEXT + " Gamma.", CHUNKS)
    assert len(llm.prompts) == 11  # another document, even with the same chunks


def test_the_estimate_counts_what_is_not_cached_unless_told_not_to_look(cache):
    llm = CountingLLM()
    enricher = Enricher(llm, cache, config())
    assert enricher.estimate(TEXT, CHUNKS).llm_calls == 3
    enricher.enrich(TEXT, CHUNKS)
    cost = enricher.estimate(TEXT, CHUNKS)
    assert (cost.llm_calls, cost.cached, cost.prompt_tokens) == (0, 3, 0)
    assert enricher.estimate(TEXT, CHUNKS, use_cache=False).llm_calls == 3
    assert (
        Enricher(None, cache, config(contexts=False, summary=False))
        .estimate(TEXT, CHUNKS)
        .llm_calls
        == 0
    )


def test_a_long_document_is_represented_by_the_part_around_the_chunk():
    text = "".join(f"{i:05d} " for i in range(10_000))  # 60,000 characters
    window = document_window(text, 30_000, 30_100, tokens=1000)
    assert len(window) == 4000 and text.index(window) < 30_000 < text.index(window) + 4000
    assert document_window(text, 0, 10, 1000) == text[:4000]
    assert document_window(text, 59_990, 60_000, 1000) == text[-4000:]
    assert document_window("short", 0, 5, 1000) == "short"


def test_re_embedding_uses_the_kept_contexts(tmp_path):
    llm = CountingLLM()
    settings = Settings.load(data_dir=tmp_path, contextual_chunks=True, llm_model="tiny")
    app = Citewell.from_settings(settings, embedder=FakeHashEmbedder(16), llm=llm)
    app.ingest_texts([("notes.txt", "Herons nest in alders.\n\nThey fish at dawn.")], "birds")
    chunks = scanning(app.store).scan(ChunkFilter())
    record = app.catalog.get_file(chunks[0].file_id)
    kept = stored_enrichment(app.contexts, record.text_sha256, [c.text for c in chunks])
    assert kept.contexts and all(c.startswith("Context of") for c in kept.contexts)
    expected = [
        embed_text(c.text, c.headings, record.title, kept.prefix(i)) for i, c in enumerate(chunks)
    ]
    assert app.spaces._embed_texts(chunks) == expected
    calls = len(llm.prompts)
    app.spaces._embed_texts(chunks)
    assert len(llm.prompts) == calls  # no LLM call to re-embed
    app.close()
