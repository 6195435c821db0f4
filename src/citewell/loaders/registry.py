"""The loader registry: every format Citewell reads, each a factory given a LoaderContext.

All loaders work side by side, chosen by the MIME type a file sniffs as. A plug-in's loader
is asked before the built-ins, so it may take over a type (a better PDF reader) or add one;
a new format declares its file extensions as ``extensions`` ({".ext": "mime/type"}) on the
factory (a Loader class with that class attribute is its own factory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from citewell.loaders.base import Loader
from citewell.loaders.epub import EpubLoader
from citewell.loaders.html import HtmlLoader
from citewell.loaders.image import ImageLoader
from citewell.loaders.legacy import DocLoader, PptLoader, XlsLoader
from citewell.loaders.mail import EmlLoader, MsgLoader
from citewell.loaders.ocr import OcrEngine
from citewell.loaders.odf import OdtLoader
from citewell.loaders.office import DocxLoader, PptxLoader, XlsxLoader
from citewell.loaders.pdf import PdfLoader
from citewell.loaders.rtf import RtfLoader
from citewell.loaders.tabular import CsvLoader, JsonLoader
from citewell.loaders.text import MarkdownLoader, TextLoader
from citewell.plugins import Registry
from citewell.types import Document


@dataclass(frozen=True)
class LoaderContext:
    """What a loader may need: the OCR engine (None: off), the DPI scans are rendered at,
    and ``read`` to extract an attachment or embedded file through every loader."""

    ocr: OcrEngine | None
    dpi: int
    read: Callable[[bytes, str], Document]


LoaderFactory = Callable[[LoaderContext], Loader]
LOADERS: Registry[LoaderFactory] = Registry("loaders")

for _name, _factory in (
    ("text", lambda _: TextLoader()),
    ("markdown", lambda _: MarkdownLoader()),
    ("html", lambda _: HtmlLoader()),
    ("pdf", lambda c: PdfLoader(c.ocr, c.dpi)),
    ("image", lambda c: ImageLoader(c.ocr)),
    ("csv", lambda _: CsvLoader()),
    ("json", lambda _: JsonLoader()),
    ("docx", lambda _: DocxLoader()),
    ("pptx", lambda _: PptxLoader()),
    ("xlsx", lambda _: XlsxLoader()),
    ("doc", lambda _: DocLoader()),
    ("ppt", lambda _: PptLoader()),
    ("xls", lambda _: XlsLoader()),
    ("odt", lambda _: OdtLoader()),
    ("rtf", lambda _: RtfLoader()),
    ("epub", lambda _: EpubLoader()),
    ("eml", lambda c: EmlLoader(c.read)),
    ("msg", lambda c: MsgLoader(c.read)),
):
    LOADERS.add(_name, _factory)


def build_loaders(context: LoaderContext) -> list[Loader]:
    """Plug-ins first (they may take over a type), then the built-ins."""
    plugins = set(LOADERS.plugins())
    ordered = sorted(LOADERS.items(), key=lambda item: item[0] not in plugins)  # stable
    return [factory(context) for _, factory in ordered]


def plugin_extensions() -> Mapping[str, str]:
    """File extensions plug-in loaders declare (a built-in's extension stays its own)."""
    found: dict[str, str] = {}
    for name in LOADERS.plugins():
        found.update(getattr(LOADERS.get(name), "extensions", {}))
    return found
