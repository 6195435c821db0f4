"""Prompt budgets count tokens once: kept sizes, counted line by line, give the counts a
fresh count would, and a chat's usage adds the sources' counts from packing."""

from __future__ import annotations

import json

from citewell.answer.context import CitedSource, context_string, context_tokens, pack
from citewell.answer.templates import render_rag_template
from citewell.splitters import KeptTokenMeasure, TokenMeasure
from tests.conftest import SCIFACT


def _abstracts(n: int) -> list[str]:
    with (SCIFACT / "corpus.jsonl").open() as lines:
        return [json.loads(line)["text"] for line, _ in zip(lines, range(n), strict=False)]


def _source(text: str, number: int = 0) -> CitedSource:
    return CitedSource(
        number, text, "f", 'a "b" <c>.pdf', "application/pdf", 3, 0, 9, 0.5, "c", "kb"
    )


class SpyMeasure(KeptTokenMeasure):
    """Remembers every text that reached the tokenizer."""

    def __init__(self, tokenizer, entries: int = 8192) -> None:  # noqa: ANN001
        super().__init__(tokenizer, entries)
        self.tokenized: list[str] = []

    def _count(self, text: str) -> int:
        self.tokenized.append(text)
        return TokenMeasure.size(self, text)


def test_kept_sizes_are_the_sizes_a_fresh_count_gives(onnx_embedder):
    fresh = TokenMeasure(onnx_embedder.tokenizer)
    kept = KeptTokenMeasure(onnx_embedder.tokenizer)
    abstracts = _abstracts(120)
    for i in range(0, len(abstracts), 6):
        sources = [_source(t, n) for n, t in enumerate(abstracts[i : i + 6], start=1)]
        prompt = render_rag_template("", context_string(sources), f"Question {i}?\nWhy so?")
        assert kept.size(prompt) == fresh.size(prompt)
        assert kept.size(prompt) == fresh.size(prompt)  # again, from what was kept
        assert context_tokens(sources, kept.size) == fresh.size(context_string(sources))
    assert kept.size("") == fresh.size("") == 0
    assert kept.size("\n\n  \n") == 0


def test_each_text_is_tokenized_once_and_the_kept_sizes_stay_bounded(onnx_embedder):
    measure = SpyMeasure(onnx_embedder.tokenizer, entries=50)
    measure.size("first line\nsecond line")
    measure.size("second line\nfirst line\nthird")
    assert measure.tokenized == ["first line", "second line", "third"]
    for i in range(500):
        measure.size(f"text number {i}")
    assert len(measure._sizes) <= 50
    long = "word " * 2000  # over the kept length: counted each time, never kept
    assert measure.size(long) == measure.size(long) == 2000
    assert long not in measure._sizes


def test_packing_counts_a_chunk_once_whatever_number_it_gets(onnx_embedder):
    measure = SpyMeasure(onnx_embedder.tokenizer)
    candidates = [_source(t) for t in _abstracts(10)]
    packed = pack(candidates, 10_000, measure.size)
    counted = len(measure.tokenized)
    assert [s.number for s in packed] == list(range(1, 11))
    context_tokens(packed, measure.size)
    pack(candidates, 10_000, measure.size)
    assert len(measure.tokenized) == counted  # numbered or not, all were kept


def test_a_tokenizer_that_does_not_split_at_whitespace_counts_whole_texts(onnx_embedder):
    from tokenizers.pre_tokenizers import Metaspace

    tokenizer = type(onnx_embedder.tokenizer).from_str(onnx_embedder.tokenizer.to_str())
    tokenizer.pre_tokenizer = Metaspace()
    measure = SpyMeasure(tokenizer)
    assert measure.size("one line\nanother line") == TokenMeasure(tokenizer).size(
        "one line\nanother line"
    )
    assert measure.tokenized == ["one line\nanother line"]
