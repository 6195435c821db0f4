"""PDFs read as laid out: tables as Markdown with their rows intact (ruled, borderless, in a
column, over a page break), two columns one after the other, running headers and page
numbers left out; the shared fixtures and PDFs made here."""

from __future__ import annotations

import pytest

from citewell.loaders.pdf import PdfLoader
from citewell.testing.pdf_pages import Page, pdf_bytes
from citewell.testing.table_questions import table_question_set
from citewell.types import TABLE_DELIMITER

pytestmark = pytest.mark.unit


def _text(data: bytes, name: str = "x.pdf") -> str:
    return PdfLoader().load(data, name).text


def _tables(text: str) -> int:
    return sum(1 for line in text.splitlines() if TABLE_DELIMITER.match(line))


@pytest.fixture(scope="module")
def made() -> dict[str, str]:
    files, _ = table_question_set()
    return {f.name: _text(f.data, f.name) for f in files}


def test_the_sparse_report_tables_come_out_as_markdown_rows(shared_docs):
    text = _text((shared_docs / "SPARSE-2024-INV-1234_borderless_table.pdf").read_bytes())
    assert "| Product Code | Location | Expected | Actual | Variance | Status |" in text
    assert "| SKU-4563 | D-22 |  | 156 |  | CRITICAL |" in text
    assert "| SKU-4563 | Software | $120.00 | $18,720.00 |  | Critical |" in text
    assert "| SKU-6678 | Software | $200.00 | $42,000.00 | 2024-10-25 | High Value |" in text
    assert _tables(text) == 2


def test_two_columns_are_read_one_after_the_other(shared_docs):
    text = _text((shared_docs / "multi-column-2p.pdf").read_bytes())
    # consecutive lines of the left column, a word broken over them made whole
    assert "answers factoid questions using a large collection of documents" in text
    assert "relies on efficient passage retrieval to select candidate\ncontexts" in text
    # the left column's last line comes before the right column's first
    left_end = text.index("of improving retrieval.")
    right_start = text.index("Retrieval in open-domain QA is usually implemented")
    assert left_end < right_start
    # the arXiv stamp set sideways in the margin does not cut into the column
    assert "arXiv:2004.04906v3" not in text[: text.index("benchmarks.")]


def test_a_single_column_paper_keeps_its_paragraphs(shared_docs):
    text = _text((shared_docs / "layout-parser-paper-fast.pdf").read_bytes())
    assert "have been\nprimarily driven by the application of neural networks" in text


def test_a_narrow_table_inside_a_column(made):
    text = made["lab-bulletin.pdf"]
    assert "| Reagent | Shelf | Stock | Expiry |" in text
    assert _tables(text) == 1  # the columns of prose beside it are no table
    assert "Table 2: Reagent stock\n\n| Reagent" in text


def test_a_table_over_a_page_break_repeats_its_header(made):
    text = made["flight-schedule.pdf"]
    assert text.count("| Flight | Origin | Destination | Departure | Gate |") == 2
    assert "Page 1 of 2" not in text and "weekly schedule" not in text  # running lines


def test_running_lines_stay_in_the_page_map():
    files, _ = table_question_set()
    made = next(f for f in files if f.name == "flight-schedule.pdf")
    document = PdfLoader().load(made.data, made.name)
    assert [s.running for s in document.sections] == [
        ("Flight operations - weekly schedule", f"Page {n} of 2") for n in (1, 2)
    ]


def test_a_full_width_table_above_two_columns(made):
    text = made["parts-catalogue.pdf"]
    assert "| Part | Material | Weight | Unit price |" in text
    assert _tables(text) == 1


def test_bare_page_numbers_are_left_out():
    pages = []
    for number in range(1, 4):
        page = Page()
        page.paragraph(72, 72, f"Body text of page {number} with enough words to read.", 400)
        page.text(300, 750, str(number))
        pages.append(page)
    document = PdfLoader().load(pdf_bytes(pages), "numbered.pdf")
    assert [s.page for s in document.sections] == [1, 2, 3]
    assert "\n2\n" not in f"\n{document.text}\n" and document.text.endswith("to read.")
