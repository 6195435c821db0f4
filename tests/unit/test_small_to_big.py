"""Small-to-big: the model reads a window around each retrieved chunk; the source still cites
the chunk's exact span."""

from __future__ import annotations

from citewell.answer.context import CitedSource, context_string, pack
from citewell.answer.expand import Expansion, expand_sources, span
from citewell.types import Section

TEXT = (
    "# Leave\n\nStaff get twenty days. Carry-over is capped at five.\n\n"
    "Requests go to the manager. Approval takes a week.\n\n"
    "# Pay\n\nSalaries are paid monthly. Overtime is paid at 1.5 times.\n\n"
    "Expenses are refunded within thirty days."
)
SECTIONS = [
    Section(0, TEXT.index("# Pay"), headings=("Leave",)),
    Section(TEXT.index("# Pay"), len(TEXT), headings=("Pay",)),
]


def source(text: str, file_id: str = "f", number: int = 0) -> CitedSource:
    start = TEXT.index(text)
    return CitedSource(
        number,
        text,
        file_id,
        "h.md",
        "text/markdown",
        None,
        start,
        start + len(text),
        1.0,
        f"c-{start}",
        "kb",
    )


def lookup(file_id: str):
    return (TEXT, SECTIONS) if file_id == "f" else None


REQUESTS = "Requests go to the manager."


def window(mode: str, chars: int, sections=SECTIONS) -> str:  # noqa: ANN001
    start = TEXT.index(REQUESTS)
    low, high = span(TEXT, sections, start, start + len(REQUESTS), Expansion(mode, chars))
    return TEXT[low:high]


def test_a_window_grows_by_whole_paragraphs_within_its_size():
    assert window("window", 60) == (
        "Staff get twenty days. Carry-over is capped at five.\n\n"
        "Requests go to the manager. Approval takes a week.\n\n# Pay"
    )
    assert window("window", 8) == REQUESTS  # no whole word fits on either side


def test_section_mode_stops_at_the_heading():
    assert window("section", 10_000) == (
        "# Leave\n\nStaff get twenty days. Carry-over is capped at five.\n\n"
        "Requests go to the manager. Approval takes a week.\n\n"
    )
    assert window("window", 10_000) == TEXT


def test_the_citation_stays_the_chunk_and_the_model_reads_the_window():
    chunk = "Carry-over is capped at five."
    (expanded,) = expand_sources([source(chunk)], lookup, Expansion("window", 40))
    assert expanded.text == chunk and expanded.start == TEXT.index(chunk)
    assert chunk in expanded.context and len(expanded.context) > len(chunk)
    assert TEXT[expanded.window_start : expanded.window_end] == expanded.context
    assert expanded.context in context_string([expanded])


def test_unknown_or_changed_text_and_off_leave_sources_as_they_are():
    plain = source("Approval takes a week.")
    assert expand_sources([plain], lookup, Expansion("off", 100)) == [plain]
    other = source("Approval takes a week.", file_id="gone")
    assert expand_sources([other], lookup, Expansion("window", 100)) == [other]


def test_a_window_that_does_not_fit_or_overlaps_is_given_as_the_chunk():
    first, second = expand_sources(
        [source("Staff get twenty days."), source("Carry-over is capped at five.")],
        lookup,
        Expansion("window", 200),
    )
    packed = pack([first, second], budget=10_000, count=len)
    assert packed[0].context and not packed[1].context  # the second's window overlaps
    assert [s.number for s in packed] == [1, 2]
    tight = pack([first], budget=len("<source>") + 60 + len(first.text), count=len)
    assert tight and not tight[0].context and tight[0].text == first.text


def test_without_recorded_sections_markdown_headings_bound_the_section():
    chunk = "Salaries are paid monthly."
    start = TEXT.index(chunk)
    low, high = span(TEXT, [], start, start + len(chunk), Expansion("section", 10_000))
    assert TEXT[low:high] == TEXT[TEXT.index("# Pay") :]
