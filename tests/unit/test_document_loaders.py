"""Office, tabular and e-book formats on the shared fixtures (../shared/data/docs)."""

import io
import re
import zipfile

import pytest

from citewell.errors import ParseError
from citewell.loaders import load_bytes

WITH_EXPECTED = [
    "word_sample.docx",
    "unit_test_headers.docx",
    "powerpoint_sample.pptx",
    "xlsx_01.xlsx",
    "csv-comma.csv",
    "epub_purvis_poetry.epub",
]

KEY_TEXT = {
    "test.docx": "AutoGen",
    "fake.docx": "Lorem ipsum dolor sit amet.",
    "docx-tables.docx": "| Header Col 1 | Header Col 2 |",
    "test.pptx": "Multi-Agent Conversation",
    "fake-power-point.pptx": "Adding a Bullet Slide",
    "test.xlsx": "affc7dad-52dc-4b98-9b5d-51e65d8a8ad0",
    "stanley-cups.xlsx": "Maple Leafs",
    "stanley-cups.csv": "| Maple Leafs | TOR | 13 |",
    "test_mskanji.csv": "| 佐藤太郎 | 30 | 東京 |",
    "test.epub": "Chapter 2",
    "winter-sports.epub": "Winter Sports in Switzerland",
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


def test_xlsx_sheets_become_tables(shared_docs):
    text = load(shared_docs, "stanley-cups.xlsx").text
    assert text.count("## ") == 2 and "| Team | Location | Stanley Cups |" in text


@pytest.mark.parametrize("name", ["lang_eng_spa_mult.doc", "lang_eng_spa_mult.ppt"])
def test_type_comes_from_content_for_misnamed_ooxml(shared_docs, name):
    document = load(shared_docs, name)
    assert "openxmlformats" in document.mime_type
    assert "All human beings are born free and equal" in document.text


CROSS_FORMAT = ["docx", "doc", "pptx", "ppt", "epub", "html", "md", "txt"]


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
