"""Images (PNG, JPEG, TIFF with every frame, BMP, GIF, WebP) read by OCR; a frame is a page."""

from __future__ import annotations

import io

from citewell.errors import ParseError
from citewell.loaders.ocr import NO_OCR, OcrEngine
from citewell.loaders.paged import paged_document
from citewell.types import Document

IMAGES = frozenset(
    {"image/png", "image/jpeg", "image/tiff", "image/bmp", "image/gif", "image/webp"}
)
MAX_PIXELS = 80_000_000  # a decompression bomb beyond this (Pillow's own guard is a warning)
MAX_FRAMES = 500


class ImageLoader:
    mime_types = IMAGES

    def __init__(self, ocr: OcrEngine | None = None) -> None:
        self.ocr = ocr

    def load(self, data: bytes, name: str) -> Document:
        from PIL import Image, UnidentifiedImageError

        if self.ocr is None:
            raise ParseError(f"{name} is an image: reading it {NO_OCR}")
        try:
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > MAX_PIXELS:
                raise ParseError(f"{name} is {image.width}x{image.height} pixels: too large.")
            pages = []
            for frame in range(min(getattr(image, "n_frames", 1), MAX_FRAMES)):
                image.seek(frame)
                pages.append(self.ocr.recognize(image).strip())
        except (UnidentifiedImageError, OSError, ValueError, EOFError) as exc:
            raise ParseError(f"{name} is not a readable image ({exc}).") from exc
        if not any(pages):
            raise ParseError(f"{name}: OCR found no text in the image.")
        return paged_document(pages, name, image.get_format_mimetype() or "image/png")
