import pytest

from citewell.errors import ParseError, UnsupportedFormat
from citewell.loaders import load_bytes, sniff


def read(docs, name):
    return (docs / name).read_bytes()


def test_utf16_text_with_bom(shared_docs):
    document = load_bytes(read(shared_docs, "fake-text-utf-16.txt"), "fake-text-utf-16.txt")
    assert "\x00" not in document.text and len(document.text.split()) > 3


def test_markdown_keeps_headings(shared_docs):
    document = load_bytes(read(shared_docs, "codeblock.md"), "codeblock.md")
    assert document.mime_type == "text/markdown" and "```" in document.text


def test_html_main_content_without_scripts(shared_docs):
    document = load_bytes(read(shared_docs, "wiki_duck.html"), "wiki_duck.html")
    assert "Duck is the common name" in document.text
    assert "<script" not in document.text and "function(" not in document.text
    assert document.title and "Duck" in document.title


def test_html_tables_become_markdown():
    html = (
        b"<html><body><h2>Prices</h2><table><tr><th>Item</th><th>Cost</th></tr>"
        b"<tr><td>Tea</td><td>2</td></tr></table><nav>menu</nav></body></html>"
    )
    text = load_bytes(html, "p.html").text
    assert "## Prices" in text and "| Item | Cost |" in text and "| Tea | 2 |" in text
    assert "menu" not in text


def test_pdf_pages_are_recorded(shared_docs):
    document = load_bytes(read(shared_docs, "multi_page.pdf"), "multi_page.pdf")
    pages = [s.page for s in document.sections]
    assert pages == sorted(pages) and len(pages) >= 2
    expected = (shared_docs / "expected" / "multi_page.pdf.md").read_text()
    words = [w for w in expected.split() if w.isalpha() and len(w) > 4][:20]
    assert all(w in document.text for w in words)


def test_type_comes_from_content_not_name():
    assert sniff(b"%PDF-1.7 ...", "report.txt") == "application/pdf"
    assert sniff(b"<!DOCTYPE html><html></html>", "page.txt") == "text/html"


@pytest.mark.parametrize(
    ("data", "name", "error"),
    [
        (b"", "empty.txt", ParseError),
        (b"%PDF-1.4 garbage garbage", "broken.pdf", ParseError),
        (bytes(range(256)) * 8, "random.bin", UnsupportedFormat),
        (b"   \n\n  ", "blank.md", ParseError),
    ],
)
def test_bad_files_give_typed_errors(data, name, error):
    with pytest.raises(error):
        load_bytes(data, name)
