"""Seed 002's chunking strategies: fixed-size and sliding windows on the seed's own example,
semantic chunking with a fixed and a percentile threshold, structure before meaning, and the
registry behind the text_splitter setting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.config import BUILTIN_BACKENDS, Settings
from citewell.splitters import (
    SPLITTERS,
    FixedSizeSplitter,
    MarkdownHeaderSplitter,
    MaxMinSemanticSplitter,
    RecursiveSplitter,
    SlidingWindowSplitter,
    ThresholdSemanticSplitter,
    TokenMeasure,
    build_splitter,
)
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import Document

# Seed 002's example document, as its code sees it (a leading newline).
SEED = (
    "\nJohn Doe is the CEO of ExampleCorp.\nHe's a skilled software engineer with a focus on "
    "scalable systems.\nIn his spare time, he plays guitar and reads science fiction.\n\n"
    "ExampleCorp was founded in 2020 and is based in San Francisco.\nIt builds AI solutions "
    "for various industries.\nJohn still finds time for music and books, even with a busy "
    "schedule.\n"
)


def doc(text: str) -> Document:
    return Document(text=text, name="t.md", mime_type="text/markdown")


def texts(splitter, text: str) -> list[str]:
    chunks = splitter.split(doc(text))
    assert all(c.text == text[c.start : c.end] for c in chunks)  # offsets exact
    return [c.text for c in chunks]


def test_fixed_size_gives_the_seeds_first_three_chunks():
    assert texts(FixedSizeSplitter(100), SEED)[:3] == [
        "\nJohn Doe is the CEO of ExampleCorp.\nHe's a skilled software engineer with a focus "
        "on scalable syste",
        "ms.\nIn his spare time, he plays guitar and reads science fiction.\n\nExampleCorp was "
        "founded in 2020 a",
        "nd is based in San Francisco.\nIt builds AI solutions for various industries.\nJohn "
        "still finds time f",
    ]


def test_sliding_window_gives_the_seeds_first_three_chunks():
    assert texts(SlidingWindowSplitter(100, 20), SEED)[:3] == [
        "\nJohn Doe is the CEO of ExampleCorp.\nHe's a skilled software engineer with a focus "
        "on scalable syste",
        "us on scalable systems.\nIn his spare time, he plays guitar and reads science "
        "fiction.\n\nExampleCorp w",
        "tion.\n\nExampleCorp was founded in 2020 and is based in San Francisco.\nIt builds AI "
        "solutions for var",
    ]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400), st.integers(1, 50), st.data())
def test_windows_cover_the_text_in_exact_slices(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = SlidingWindowSplitter(size, overlap).split(doc(text))
    assert all(c.text == text[c.start : c.end] and len(c.text) <= size for c in chunks)
    assert all(c.start % (size - overlap) == 0 for c in chunks)  # blank windows left out
    if text.strip():
        assert chunks and chunks[-1].end >= len(text.rstrip())


def test_windows_edge_cases():
    assert texts(FixedSizeSplitter(10), "") == []
    assert texts(FixedSizeSplitter(10), " \n\n ") == []
    assert texts(FixedSizeSplitter(10), "one") == ["one"]
    assert texts(FixedSizeSplitter(4), "日本語のテキスト") == ["日本語の", "テキスト"]
    with pytest.raises(ValueError):
        SlidingWindowSplitter(10, 10)


def test_windows_in_tokens(onnx_embedder):
    measure = TokenMeasure(onnx_embedder.tokenizer)
    text = SEED * 3
    chunks = SlidingWindowSplitter(24, 6, measure).split(doc(text))
    assert len(chunks) > 3
    assert all(c.text == text[c.start : c.end] for c in chunks)
    assert all(measure.size(c.text) <= 24 for c in chunks)


TOPICS = (
    "Cats purr softly. Cats purr loudly at night. Cats purr when fed. "
    "Rockets launch fuel stages. Rockets launch fuel from pads. Rockets launch fuel fast."
)


def test_semantic_threshold_cuts_where_neighbours_differ():
    splitter = ThresholdSemanticSplitter(FakeHashEmbedder(256), 500, threshold=0.3)
    assert [t.split()[0] for t in texts(splitter, TOPICS)] == ["Cats", "Rockets"]


def test_semantic_percentile_cuts_at_the_documents_own_largest_distance():
    # Five neighbour pairs: the 80th percentile of distances leaves only the largest one.
    splitter = ThresholdSemanticSplitter(FakeHashEmbedder(256), 500, None, percentile=80)
    assert [t.split()[0] for t in texts(splitter, TOPICS)] == ["Cats", "Rockets"]


def test_semantic_sentence_windows_and_edge_cases():
    embedder = FakeHashEmbedder(256)
    windowed = ThresholdSemanticSplitter(embedder, 500, threshold=0.3, window=3)
    assert "".join(texts(windowed, TOPICS)).replace(" ", "") == TOPICS.replace(" ", "")
    single = ThresholdSemanticSplitter(embedder, 500, threshold=0.3)
    assert texts(single, "") == []
    assert texts(single, "Only one sentence here.") == ["Only one sentence here."]
    long = "word " * 200 + "end."
    assert all(len(t) <= 120 for t in texts(ThresholdSemanticSplitter(embedder, 120), long))
    cjk = "猫はよく眠る。猫は魚が好きだ。ロケットは燃料で飛ぶ。ロケットは速い。"
    assert "".join(texts(single, cjk)) == cjk  # sentences end at 。
    code = "Intro text.\n\n```python\ndef f():\n    return 1\n```\n\nAfter the code."
    assert texts(single, code)  # offsets checked in texts()


def test_structure_first_then_meaning_inside_long_sections():
    text = "# Pets\n\n" + TOPICS.replace("Rockets", "Cats") + "\n\n# Space\n\n" + TOPICS
    embedder = FakeHashEmbedder(256)
    for inner in (
        ThresholdSemanticSplitter(embedder, 120, threshold=0.3),
        MaxMinSemanticSplitter(embedder, 120, 0, RecursiveSplitter(120).measure),
    ):
        chunks = MarkdownHeaderSplitter(inner, 0).split(doc(text))
        assert all(c.text == text[c.start : c.end] and len(c.text) <= 120 for c in chunks)
        space = [c for c in chunks if c.headings == ("Space",)]
        assert space and all("Pets" not in c.text for c in space)
        assert {c.text.split()[0] for c in space} >= {"Cats", "Rockets"}


def test_registry_names_are_the_settings_allowed_values(tmp_path):
    assert set(BUILTIN_BACKENDS["splitters"]) == set(SPLITTERS)
    for name in SPLITTERS:
        settings = Settings.load(data_dir=tmp_path, text_splitter=name, chunk_size=200)
        splitter = build_splitter(settings, FakeHashEmbedder(64))
        chunks = splitter.split(doc("# Title\n\n" + TOPICS * 4))
        assert chunks and all(c.text for c in chunks), name
    fixed = build_splitter(Settings.load(data_dir=tmp_path, text_splitter="fixed"), None)
    assert isinstance(fixed, FixedSizeSplitter)  # the seed's windows ignore headings


def test_configurable_separator_hierarchy(tmp_path):
    settings = Settings.load(
        data_dir=tmp_path,
        chunk_separators=["\n\n", ".", ","],
        chunk_size=60,
        chunk_overlap=0,
        markdown_header_splitter=False,
    )
    chunks = build_splitter(settings, None).split(doc(SEED))
    got = [c.text for c in chunks]
    assert got[0] == "John Doe is the CEO of ExampleCorp."
    assert "John still finds time for music and books," in got  # ',' is a separator
    assert any("\n" in t for t in got)  # '\n' is not (only the ones given are)
    assert all(len(t) <= 60 for t in got)
