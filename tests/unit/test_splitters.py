from hypothesis import given, settings
from hypothesis import strategies as st

from citewell.splitters import (
    MarkdownHeaderSplitter,
    MaxMinSemanticSplitter,
    RecursiveSplitter,
    TokenMeasure,
)
from citewell.splitters.base import CharacterMeasure
from citewell.splitters.markdown import header_sections
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import Document, Section


def doc(text: str, sections=()) -> Document:
    return Document(text=text, name="t.md", mime_type="text/markdown", sections=tuple(sections))


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab c.\n,")), max_size=600), st.integers(5, 80), st.data()
)
def test_recursive_chunks_are_exact_slices_within_size(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = RecursiveSplitter(size, overlap).split(doc(text))
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]
        assert 0 < len(chunk.text) <= size
        assert chunk.text == chunk.text.strip()
    covered = "".join(text[c.start : c.end] for c in chunks).replace(" ", "")
    assert set(covered) >= set(text.replace(" ", "").replace("\n", ""))


def test_recursive_prefers_paragraphs_then_sentences():
    text = "First para one. Still one.\n\nSecond paragraph here."
    chunks = RecursiveSplitter(30, 0).split(doc(text))
    assert [c.text for c in chunks] == ["First para one. Still one.", "Second paragraph here."]


def test_recursive_overlap_repeats_the_tail():
    text = " ".join(f"w{i}" for i in range(40))
    chunks = RecursiveSplitter(30, 10).split(doc(text))
    assert len(chunks) > 2
    for a, b in zip(chunks, chunks[1:], strict=False):
        assert b.start < a.end  # neighbours share text


def test_long_word_is_hard_cut():
    chunks = RecursiveSplitter(10, 0).split(doc("x" * 35))
    assert [len(c.text) for c in chunks] == [10, 10, 10, 5]


def test_token_measure_counts_embedder_tokens(onnx_embedder):
    measure = TokenMeasure(onnx_embedder.tokenizer)
    assert measure.size("hello world") == 2
    assert measure.size("unbelievably") > 1  # word pieces
    text = "word " * 600
    chunks = RecursiveSplitter(100, 10, measure).split(doc(text))
    assert all(measure.size(c.text) <= 100 for c in chunks)
    # the tokenizer's 256-token truncation is restored afterwards
    assert len(onnx_embedder.tokenizer.encode(text).ids) == 256


def test_pages_follow_chunks():
    text = "page one text\n\npage two text"
    sections = [Section(0, 13, page=1), Section(15, 28, page=2)]
    chunks = RecursiveSplitter(14, 0).split(doc(text, sections))
    assert [(c.text, c.page) for c in chunks] == [("page one text", 1), ("page two text", 2)]


def test_header_sections_track_paths_and_ignore_fenced_hashes():
    text = "pre\n# A\nx\n## B\ny\n```\n# not\n```\n### C\nz\n# D\nw\n"
    paths = [h for _, _, h in header_sections(text)]
    assert paths == [(), ("A",), ("A", "B"), ("A", "B", "C"), ("D",)]


def test_markdown_splitter_merges_then_splits_large_sections():
    body = "Sentence number one is here. " * 20
    text = f"# Guide\n\n## Tiny\nok\n\n## Big\n{body}\n\n## End\nbye"
    chunks = MarkdownHeaderSplitter(RecursiveSplitter(200, 20), 100).split(doc(text))
    assert chunks[0].headings == ("Guide",)
    assert chunks[0].text.startswith("# Guide\n\n## Tiny")  # tiny sections merged forward
    big = [c for c in chunks if c.headings == ("Guide", "Big")]
    assert len(big) > 1 and all(len(c.text) <= 200 for c in chunks)
    assert chunks[-1].headings == ("Guide", "End")


def test_semantic_splitter_groups_related_sentences():
    text = (
        "Cats purr softly. Cats purr loudly at night. Cats purr when fed. "
        "Rockets launch fuel stages. Rockets launch fuel from pads. Rockets launch fuel fast."
    )
    # min_size boosts closeness while a chunk is small, so near-ties still join (seed 002).
    splitter = MaxMinSemanticSplitter(
        FakeHashEmbedder(256), max_size=500, min_size=100, measure=CharacterMeasure()
    )
    chunks = splitter.split(doc(text))
    assert [c.text.split()[0] for c in chunks] == ["Cats", "Rockets"]
    assert all(c.text == text[c.start : c.end] for c in chunks)


def test_semantic_splitter_strict_rule_without_boost():
    # With no boost, a sentence only joins if strictly closer than the chunk's cohesion.
    text = "Cats purr softly. Cats purr loudly at night. Cats purr when fed. Rockets fly."
    splitter = MaxMinSemanticSplitter(
        FakeHashEmbedder(256), max_size=500, min_size=0, measure=CharacterMeasure()
    )
    assert [c.text for c in splitter.split(doc(text))] == [
        "Cats purr softly. Cats purr loudly at night.",
        "Cats purr when fed.",
        "Rockets fly.",
    ]


def test_semantic_splitter_respects_max_size():
    text = "Cats purr. " * 30
    splitter = MaxMinSemanticSplitter(
        FakeHashEmbedder(), max_size=60, min_size=20, measure=CharacterMeasure()
    )
    assert all(len(c.text) <= 60 for c in splitter.split(doc(text)))
