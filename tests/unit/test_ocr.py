"""Scans and images through both OCR engines (tesseract from Debian, rapidocr from PyPI)."""

import pytest

from citewell.errors import ParseError
from citewell.loaders import DocumentReader
from citewell.loaders.ocr import build_ocr

SCANS = {
    "ocr_test.pdf": "PDF document conversion",
    "layout-parser-paper-fast.jpg": "document image analysis",
    "2206.01062.tif": "Accurate document layout analysis",
    "MEDRPT-2024-PAT-3847_medical_report_scan.pdf": "MEDRPT-2024-PAT-3847",
}


@pytest.fixture(scope="module", params=["tesseract", "rapidocr"])
def reader(request):
    engine = build_ocr(request.param)
    assert engine is not None and engine.name == request.param
    return DocumentReader(engine)


@pytest.mark.parametrize(("name", "key"), sorted(SCANS.items()))
def test_scans_are_read(reader, shared_docs, name, key):
    document = reader.read((shared_docs / name).read_bytes(), name)
    assert key in document.text
    if name.startswith("MEDRPT"):  # three scanned pages keep their page numbers
        assert [s.page for s in document.sections] == [1, 2, 3]


def test_without_ocr_a_scan_is_refused_with_the_fix(shared_docs):
    reader = DocumentReader(ocr=None)
    for name in ("ocr_test.pdf", "layout-parser-paper-fast.jpg"):
        with pytest.raises(ParseError, match="apt-get install tesseract-ocr"):
            reader.read((shared_docs / name).read_bytes(), name)


def test_text_layer_pdfs_do_not_go_through_ocr(shared_docs):
    class CountingOcr:
        name = "counting"
        calls = 0

        def recognize(self, image):
            self.calls += 1
            return ""

    ocr = CountingOcr()
    DocumentReader(ocr).read((shared_docs / "multi_page.pdf").read_bytes(), "multi_page.pdf")
    assert ocr.calls == 0


def test_a_scanned_table_comes_out_as_a_markdown_table(reader):
    """Where the engine says where its words stand, a scan is laid out like a text layer:
    its table keeps its rows, and its lines have boxes for the viewer."""
    import io

    import pypdfium2 as pdfium

    from citewell.testing.table_questions import table_question_set

    files, _ = table_question_set()
    made = next(f for f in files if f.name == "staff-directory.pdf")
    image = pdfium.PdfDocument(made.data)[0].render(scale=200 / 72).to_pil().convert("RGB")
    scan = io.BytesIO()
    image.save(scan, format="PDF", resolution=200.0)  # an image, no text layer
    document = reader.read(scan.getvalue(), "scanned-directory.pdf")
    assert "| Name | Department | Office | Extension | Start year |" in document.text
    rows = [line for line in document.text.splitlines() if line.startswith("| ")]
    assert len(rows) == 14 and all(line.count("|") == 6 for line in rows)  # + delimiter
    assert "| Bruno Holm | Legal | A-223 | 6744 | 2020 |" in document.text
    (page,) = document.sections
    texts = {document.text[start:end] for start, end, *_ in page.boxes}
    assert "| Bruno Holm | Legal | A-223 | 6744 | 2020 |" in texts
