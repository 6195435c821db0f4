"""Conformance suites of the extraction roles: loaders and OCR engines.

``LoaderConformance``: give ``loader`` and ``sample`` (a file's bytes, its name and a phrase
its text holds). ``OcrConformance``: give ``ocr``; it reads a rendered line of large text.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from citewell.loaders.base import Loader, sniff
from citewell.loaders.ocr import OcrEngine


@dataclass(frozen=True)
class Sample:
    data: bytes
    name: str
    phrase: str  # words the extracted text must hold


class LoaderConformance:
    def test_it_says_which_types_it_reads(self, loader: Loader) -> None:
        assert loader.mime_types and all("/" in m for m in loader.mime_types)

    def test_the_sample_sniffs_as_one_of_its_types(self, loader: Loader, sample: Sample) -> None:
        extra = getattr(loader, "extensions", {})
        assert sniff(sample.data, sample.name, extra) in loader.mime_types

    def test_it_extracts_the_text(self, loader: Loader, sample: Sample) -> None:
        document = loader.load(sample.data, sample.name)
        assert sample.phrase in " ".join(document.text.split())
        assert document.mime_type in loader.mime_types and document.name

    def test_sections_lie_inside_the_text(self, loader: Loader, sample: Sample) -> None:
        document = loader.load(sample.data, sample.name)
        assert all(0 <= s.start <= s.end <= len(document.text) for s in document.sections)


def rendered_line(text: str) -> object:
    """A white page with ``text`` in large black letters (a PIL image)."""
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (1600, 300), "white")
    font = ImageFont.load_default(size=96)
    ImageDraw.Draw(image).text((40, 90), text, fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return Image.open(io.BytesIO(buffer.getvalue()))


class OcrConformance:
    def test_it_has_a_name(self, ocr: OcrEngine) -> None:
        assert isinstance(ocr.name, str) and ocr.name

    def test_it_reads_printed_words(self, ocr: OcrEngine) -> None:
        text = ocr.recognize(rendered_line("Parental leave"))  # type: ignore[arg-type]
        assert "parental" in text.lower() and "leave" in text.lower()

    def test_a_blank_page_gives_no_words(self, ocr: OcrEngine) -> None:
        from PIL import Image

        assert not ocr.recognize(Image.new("RGB", (800, 600), "white")).strip()
