"""Office, tabular and e-book formats on the shared fixtures (../shared/data/docs)."""

import io
import re
import zipfile

import pytest

from citewell.errors import ParseError
from citewell.loaders import load_bytes

WITH_EXPECTED = [
    "multi_page.pdf",
    "2305.03393v1-pg9.pdf",
    "SPARSE-2024-INV-1234_borderless_table.pdf",
    "right_to_left_01.pdf",
    "ocr_test.pdf",
    "word_sample.docx",
    "unit_test_headers.docx",
    "powerpoint_sample.pptx",
    "xlsx_01.xlsx",
    "csv-comma.csv",
    "epub_purvis_poetry.epub",
]

# One key string per fixture in ../shared/data/docs: every file must parse and yield it.
KEY_TEXT = {
    "2206.01062.tif": "Accurate document layout analysis",  # OCR
    "2305.03393v1-pg9.pdf": "Hyper Parameter Optimization",
    "MANIFEST.md": "Cross-format set",
    "MEDRPT-2024-PAT-3847_medical_report_scan.pdf": "MEDRPT-2024-PAT-3847",  # OCR
    "README.md": "Example Docs",
    "SPARSE-2024-INV-1234_borderless_table.pdf": "Distribution Center East",
    "codeblock.md": "<!DOCTYPE html>",
    "csv-comma.csv": "| Sheryl | Baxter | Rasmussen Group |",
    "docx-tables.docx": "| Header Col 1 | Header Col 2 |",
    "epub_purvis_poetry.epub": "Sarah Louisa Forten Purvis",
    "example-10k-1p.html": "Galaxy Gaming, Inc.",
    "fake-doc.rtf": "| Row 1, Cell 1 | Row 1, Cell 2 |",
    "fake-email.eml": "This is a test email to use for unit tests.",
    "fake-memo.pdf": "20,000 bottles of water",
    "fake-power-point.ppt": "Adding a Bullet Slide",
    "fake-power-point.pptx": "Adding a Bullet Slide",
    "fake-text-utf-16.txt": "Doylestown, PA 18901",
    "fake.doc": "Lorem ipsum dolor sit amet.",
    "fake.docx": "Lorem ipsum dolor sit amet.",
    "fake.odt": "| Color | Blue | Red | Green |",
    "lang_eng_spa_mult.doc": "All human beings are born free",
    "lang_eng_spa_mult.docx": "All human beings are born free",
    "lang_eng_spa_mult.eml": "All human beings are born free",
    "lang_eng_spa_mult.epub": "All human beings are born free",
    "lang_eng_spa_mult.html": "All human beings are born free",
    "lang_eng_spa_mult.md": "All human beings are born free",
    "lang_eng_spa_mult.odt": "All human beings are born free",
    "lang_eng_spa_mult.ppt": "All human beings are born free",
    "lang_eng_spa_mult.pptx": "All human beings are born free",
    "lang_eng_spa_mult.rtf": "All human beings are born free",
    "lang_eng_spa_mult.txt": "All human beings are born free",
    "layout-parser-paper-fast.jpg": "document image analysis",  # OCR
    "layout-parser-paper-fast.pdf": "A Unified Toolkit for Deep",
    "multi-column-2p.pdf": "Dense Passage Retrieval",
    "multi_page.pdf": "The Evolution of the Word Processor",
    "ocr_test.pdf": "PDF document conversion",  # OCR
    "powerpoint_sample.pptx": "Test Table Slide",
    "right_to_left_01.pdf": "تحسين الإنتاجية وحل المشكلات",
    "simple.odt": "# These are a few of my favorite things:",
    "stanley-cups.csv": "| Maple Leafs | TOR | 13 |",
    "stanley-cups.xlsx": "Maple Leafs",
    "test.docx": "AutoGen",
    "test.epub": "Chapter 2",
    "test.pdf": "Large language models (LLMs)",
    "test.pptx": "Multi-Agent Conversation",
    "test.rtf": "This is a Sample RTF File",
    "test.xls": "| Alpha | Beta | Gamma | Delta |",
    "test.xlsx": "affc7dad-52dc-4b98-9b5d-51e65d8a8ad0",
    "test_blog.html": "Does Model and Inference Parameter Matter",
    "test_mskanji.csv": "| 佐藤太郎 | 30 | 東京 |",
    "test_outlook_msg.msg": "This is the body of the test email message",
    "test_wikipedia.html": "American multinational technology corporation",
    "unit_test_headers.docx": "## Section 1.1",
    "wiki_duck.html": "Common name for many species",
    "winter-sports.epub": "Winter Sports in Switzerland",
    "word_sample.docx": "Swimming in the lake",
    "xlsx_01.xlsx": "| first | second | third |",
}


def load(docs, name):
    return load_bytes((docs / name).read_bytes(), name)


PLACEHOLDERS = {"image"}  # the expected files' <!-- image --> markers, not document text


def words(text):
    return set(re.findall(r"[^\W\d_]{5,}", text.lower())) - PLACEHOLDERS


@pytest.mark.parametrize("name", WITH_EXPECTED)
def test_expected_text_comes_out(shared_docs, name):
    expected = words((shared_docs / "expected" / f"{name}.md").read_text())
    got = words(load(shared_docs, name).text)
    missing = expected - got
    assert len(missing) <= max(2, len(expected) // 50), sorted(missing)[:20]


def test_every_fixture_has_a_key_string(shared_docs):
    fixtures = {p.name for p in shared_docs.iterdir() if p.is_file()}
    assert fixtures == set(KEY_TEXT)


@pytest.mark.parametrize(("name", "key"), sorted(KEY_TEXT.items()))
def test_key_text_comes_out(shared_docs, name, key):
    assert key in load(shared_docs, name).text


def test_docx_headings_become_markdown(shared_docs):
    text = load(shared_docs, "unit_test_headers.docx").text
    assert "# Section 1\n" in text and "## Section 1.1\n" in text


def test_pptx_slides_are_pages(shared_docs):
    document = load(shared_docs, "test.pptx")
    assert [s.page for s in document.sections] == list(range(1, 7))
    assert document.text.startswith("## Slide 1")


def test_ppt_slide_titles_are_headings_as_in_pptx(shared_docs):
    def headings(name):
        text = load_bytes((shared_docs / name).read_bytes(), name).text
        return [line for line in text.splitlines() if line.startswith("## ")]

    assert headings("fake-power-point.ppt") == headings("fake-power-point.pptx")
    assert headings("fake-power-point.ppt") == ["## Slide 1: Adding a Bullet Slide"]


def test_xlsx_sheets_become_tables(shared_docs):
    text = load(shared_docs, "stanley-cups.xlsx").text
    assert text.count("## ") == 2 and "| Team | Location | Stanley Cups |" in text


@pytest.mark.parametrize("name", ["lang_eng_spa_mult.doc", "lang_eng_spa_mult.ppt"])
def test_type_comes_from_content_for_misnamed_ooxml(shared_docs, name):
    document = load(shared_docs, name)
    assert "openxmlformats" in document.mime_type
    assert "All human beings are born free and equal" in document.text


CROSS_FORMAT = ["docx", "doc", "pptx", "ppt", "epub", "html", "md", "txt", "rtf", "odt", "eml"]


def test_cross_format_set_yields_the_same_text(shared_docs):
    reference = words(load(shared_docs, "lang_eng_spa_mult.txt").text)
    for ext in CROSS_FORMAT:
        got = words(load(shared_docs, f"lang_eng_spa_mult.{ext}").text)
        overlap = len(reference & got) / len(reference)
        assert overlap > 0.95, (ext, overlap, sorted(reference - got)[:10])


def test_zip_bomb_posing_as_docx_is_refused():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"\0" * (300 * 1024 * 1024))
    with pytest.raises(ParseError, match="zip bomb"):
        load_bytes(buffer.getvalue(), "bomb.docx")


def test_broken_zip_named_docx_is_a_parse_error():
    with pytest.raises(ParseError):
        load_bytes(b"PK\x03\x04" + b"garbage" * 50, "broken.docx")


def test_json_is_pretty_printed():
    document = load_bytes(b'{"policy": {"leave_weeks": 16, "name": "Parental"}}', "p.json")
    assert '"leave_weeks": 16' in document.text and document.mime_type == "application/json"
    with pytest.raises(ParseError, match="not valid JSON"):
        load_bytes(b"{oops", "bad.json")
