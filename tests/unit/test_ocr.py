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
