"""The chunk-min-size-target merge, case by case as Open WebUI documents it (seed 000)."""

from citewell.splitters.base import CharacterMeasure
from citewell.splitters.markdown import SourcedChunk, merge_small_chunks
from citewell.types import Chunk

M = CharacterMeasure()


def sc(text: str, source: str = "doc", headings: tuple[str, ...] = (), start: int = 0):
    return SourcedChunk(
        source, Chunk(text=text, start=start, end=start + len(text), headings=headings)
    )


def texts(items):
    return [i.chunk.text for i in items]


def test_consecutive_tiny_chunks_accumulate_until_target():
    parts = [sc("a" * 10), sc("b" * 10), sc("c" * 10), sc("d" * 10)]
    merged = merge_small_chunks(parts, min_size=25, max_size=100, measure=M)
    # 10 -> 22 (still < 25) -> 34 (now >= 25: stop absorbing)
    assert texts(merged) == ["a" * 10 + "\n\n" + "b" * 10 + "\n\n" + "c" * 10, "d" * 10]


def test_size_check_is_on_the_accumulated_chunk_not_the_next():
    merged = merge_small_chunks([sc("x" * 30), sc("y")], min_size=25, max_size=100, measure=M)
    assert texts(merged) == ["x" * 30, "y"]  # the first is already big enough; y stays alone


def test_small_chunk_before_large_one_stays_undersized():
    merged = merge_small_chunks([sc("s" * 5), sc("L" * 98)], min_size=50, max_size=100, measure=M)
    assert texts(merged) == ["s" * 5, "L" * 98]


def test_merge_never_exceeds_max_size_counting_the_separator():
    merged = merge_small_chunks([sc("a" * 49), sc("b" * 49)], min_size=60, max_size=99, measure=M)
    assert texts(merged) == ["a" * 49, "b" * 49]  # 49 + 2 + 49 = 100 > 99
    merged = merge_small_chunks([sc("a" * 49), sc("b" * 48)], min_size=60, max_size=99, measure=M)
    assert texts(merged) == ["a" * 49 + "\n\n" + "b" * 48]


def test_last_chunk_may_stay_undersized():
    merged = merge_small_chunks([sc("a" * 50), sc("z")], min_size=40, max_size=100, measure=M)
    assert texts(merged)[-1] == "z"


def test_never_merges_across_documents():
    merged = merge_small_chunks(
        [sc("a", "one"), sc("b", "two"), sc("c", "two")], min_size=50, max_size=100, measure=M
    )
    assert texts(merged) == ["a", "b\n\nc"]
    assert [m.source for m in merged] == ["one", "two"]


def test_merged_chunk_keeps_first_metadata_and_spans_both():
    first = sc("intro", headings=("Guide",), start=0)
    second = sc("details here", headings=("Guide", "Details"), start=7)
    (merged,) = merge_small_chunks([first, second], min_size=50, max_size=100, measure=M)
    assert merged.chunk.headings == ("Guide",)
    assert (merged.chunk.start, merged.chunk.end) == (0, 19)
    assert merged.chunk.text == "intro\n\ndetails here"


def test_forward_only_no_backward_merge():
    merged = merge_small_chunks([sc("B" * 60), sc("t")], min_size=50, max_size=100, measure=M)
    assert texts(merged) == ["B" * 60, "t"]


def test_zero_target_disables_merging_and_empty_input():
    parts = [sc("a"), sc("b")]
    assert texts(merge_small_chunks(parts, 0, 100, M)) == ["a", "b"]
    assert merge_small_chunks([], 10, 100, M) == []
