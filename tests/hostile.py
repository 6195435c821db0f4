"""The hostile-input set: broken and malicious files every loader path must refuse cleanly."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from pypdf import PdfReader, PdfWriter

from tests.conftest import DOCS


def truncated_pdf() -> bytes:
    data = (DOCS / "multi_page.pdf").read_bytes()
    return data[: len(data) // 2]


def encrypted_pdf() -> bytes:
    writer = PdfWriter()
    for page in PdfReader(DOCS / "multi_page.pdf").pages:
        writer.add_page(page)
    writer.encrypt("secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def zip_bomb_docx() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", b"<Types/>")
        archive.writestr("word/document.xml", b"\0" * (300 * 1024 * 1024))
    return buffer.getvalue()


def nested_html(depth: int = 100_000) -> bytes:
    return b"<html><body>" + b"<div>" * depth + b"deep text" + b"</div>" * depth + b"</body></html>"


def huge_text(megabytes: int = 200) -> bytes:
    return b"All work and no play makes Jack a dull boy.\n" * (megabytes * 1024 * 1024 // 44)


def random_pdf() -> bytes:
    return b"%PDF-1.7\n" + bytes((i * 7919) % 251 for i in range(20_000))


# name, bytes factory, error class name (None: the file is odd but readable)
HOSTILE = [
    ("truncated.pdf", truncated_pdf, "ParseError"),
    ("encrypted.pdf", encrypted_pdf, "ParseError"),
    ("bomb.docx", zip_bomb_docx, "ParseError"),
    ("random.pdf", random_pdf, "ParseError"),
    ("empty.txt", lambda: b"", "ParseError"),
    ("deep.html", nested_html, None),
]


def write_all(folder: Path) -> list[Path]:
    paths = []
    for name, make, _ in HOSTILE:
        path = folder / name
        path.write_bytes(make())
        paths.append(path)
    return paths
