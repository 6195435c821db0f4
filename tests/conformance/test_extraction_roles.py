"""Every built-in loader and OCR engine passes its role's shipped suite (citewell.testing),
on the shared fixtures (../shared/data/docs)."""

import json

import pytest

from citewell.loaders import LOADERS, DocumentReader, LoaderContext
from citewell.loaders.ocr import OCR_ENGINES, build_ocr
from citewell.testing.loaders import LoaderConformance, OcrConformance, Sample

pytestmark = pytest.mark.conformance

FREE = "All human beings are born free"
SAMPLES = {  # a built-in loader → a fixture it reads and a phrase of its text
    "text": ("lang_eng_spa_mult.txt", FREE),
    "markdown": ("lang_eng_spa_mult.md", FREE),
    "html": ("lang_eng_spa_mult.html", FREE),
    "pdf": ("multi_page.pdf", "The Evolution of the Word Processor"),
    "image": ("layout-parser-paper-fast.jpg", "document image analysis"),
    "csv": ("stanley-cups.csv", "| Maple Leafs | TOR | 13 |"),
    "json": ("", "sixteen weeks"),
    "docx": ("fake.docx", "Lorem ipsum dolor sit amet."),
    "pptx": ("test.pptx", "Multi-Agent Conversation"),
    "xlsx": ("stanley-cups.xlsx", "Maple Leafs"),
    "doc": ("fake.doc", "Lorem ipsum dolor sit amet."),
    "ppt": ("fake-power-point.ppt", "Adding a Bullet Slide"),
    "xls": ("test.xls", "| Alpha | Beta | Gamma | Delta |"),
    "odt": ("fake.odt", "| Color | Blue | Red | Green |"),
    "rtf": ("test.rtf", "This is a Sample RTF File"),
    "epub": ("winter-sports.epub", "Winter Sports in Switzerland"),
    "eml": ("fake-email.eml", "This is a test email to use for unit tests."),
    "msg": ("test_outlook_msg.msg", "This is the body of the test email message"),
}


def test_every_built_in_loader_has_a_sample():
    assert set(SAMPLES) == set(LOADERS.names())


class TestBuiltInLoaders(LoaderConformance):
    @pytest.fixture(params=sorted(SAMPLES))
    def loader_name(self, request):
        return request.param

    @pytest.fixture
    def loader(self, loader_name):
        ocr = build_ocr("auto")
        return LOADERS.get(loader_name)(LoaderContext(ocr, 200, DocumentReader(ocr).read))

    @pytest.fixture
    def sample(self, loader_name, shared_docs):
        name, phrase = SAMPLES[loader_name]
        if not name:  # no JSON among the fixtures
            data = json.dumps({"leave": {"parental": "sixteen weeks"}}).encode()
            return Sample(data, "policy.json", phrase)
        return Sample((shared_docs / name).read_bytes(), name, phrase)


class TestBuiltInOcr(OcrConformance):
    @pytest.fixture(params=list(OCR_ENGINES.names()))
    def ocr(self, request):
        return build_ocr(request.param)
