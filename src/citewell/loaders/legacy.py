"""Office 97–2003 binaries (.doc, .ppt, .xls) without LibreOffice.

Word and PowerPoint are read straight from their OLE2 streams (olefile, BSD): the Word piece
table and the PowerPoint text atoms are public formats ([MS-DOC], [MS-PPT]) and small enough
to walk here. Excel goes through xlrd (BSD).
"""

from __future__ import annotations

import io
import logging
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from citewell.errors import ParseError
from citewell.loaders.paged import paged_document
from citewell.loaders.tables import markdown_table
from citewell.types import Document

DOC = "application/msword"
PPT = "application/vnd.ms-powerpoint"
XLS = "application/vnd.ms-excel"
OLE_STREAMS = (
    ("WordDocument", DOC),
    ("PowerPoint Document", PPT),
    ("Workbook", XLS),
    ("Book", XLS),
)
MSG = "application/vnd.ms-outlook"


def open_ole(data: bytes, name: str) -> Any:
    import olefile

    logging.getLogger("olefile").setLevel(logging.ERROR)  # it logs every bad sector at INFO
    try:
        return olefile.OleFileIO(io.BytesIO(data))
    except Exception as exc:  # olefile raises OSError, ValueError, struct.error and more
        raise ParseError(f"{name} is not a readable Office 97-2003 file ({exc}).") from exc


def ole_kind(data: bytes) -> str | None:
    """The MIME type of an OLE2 compound file, judged by the streams it holds."""
    try:
        ole = open_ole(data, "")
    except ParseError:
        return None
    streams = {"/".join(s) for s in ole.listdir()}
    if any(s.startswith("__substg1.0_") for s in streams):
        return MSG
    return next((mime for stream, mime in OLE_STREAMS if stream in streams), None)


def _read(ole: Any, stream: str, name: str) -> bytes:
    try:
        return bytes(ole.openstream(stream).read())
    except OSError as exc:
        raise ParseError(f"{name}: stream {stream!r} is missing or damaged ({exc}).") from exc


class DocLoader:
    """Word 97–2003: the main-document text through the piece table (CLX)."""

    mime_types = frozenset({DOC})

    def load(self, data: bytes, name: str) -> Document:
        ole = open_ole(data, name)
        word = _read(ole, "WordDocument", name)
        try:
            text = _word_text(ole, word, name)
        except (struct.error, IndexError) as exc:
            raise ParseError(f"{name} is a damaged Word document ({exc}).") from exc
        return Document(_word_markdown(text), name, DOC)


def _word_text(ole: Any, word: bytes, name: str) -> str:
    flags = struct.unpack_from("<H", word, 0x0A)[0]
    if flags & 0x0100:
        raise ParseError(f"{name} is password-protected; remove the password and retry.")
    table = _read(ole, "1Table" if flags & 0x0200 else "0Table", name)
    csw = struct.unpack_from("<H", word, 32)[0]
    lw_start = 34 + csw * 2
    cslw = struct.unpack_from("<H", word, lw_start)[0]
    ccp_text = struct.unpack_from("<i", word, lw_start + 2 + 3 * 4)[0]
    fclcb = lw_start + 2 + cslw * 4 + 2
    fc_clx, lcb_clx = struct.unpack_from("<II", word, fclcb + 33 * 8)
    pieces = _pieces(table[fc_clx : fc_clx + lcb_clx])
    out: list[str] = []
    for cp_start, cp_end, fc, compressed in pieces:
        count = cp_end - cp_start
        if compressed:
            out.append(word[fc : fc + count].decode("cp1252", errors="replace"))
        else:
            out.append(word[fc : fc + 2 * count].decode("utf-16-le", errors="replace"))
    return "".join(out)[:ccp_text]


def _pieces(clx: bytes) -> list[tuple[int, int, int, bool]]:
    """(first cp, end cp, byte offset, 8-bit?) for each piece of the piece table."""
    pos = 0
    while pos < len(clx) and clx[pos] == 0x01:  # Prc entries (formatting) come first
        pos += 3 + struct.unpack_from("<H", clx, pos + 1)[0]
    if pos >= len(clx) or clx[pos] != 0x02:
        raise IndexError("no piece table")
    size = struct.unpack_from("<I", clx, pos + 1)[0]
    plc = clx[pos + 5 : pos + 5 + size]
    n = (size - 4) // 12
    cps = struct.unpack_from(f"<{n + 1}i", plc, 0)
    pieces = []
    for i in range(n):
        fc = struct.unpack_from("<I", plc, 4 * (n + 1) + 8 * i + 2)[0]
        compressed = bool(fc & 0x40000000)
        offset = (fc & 0x3FFFFFFF) // 2 if compressed else fc & 0x3FFFFFFF
        pieces.append((cps[i], cps[i + 1], offset, compressed))
    return pieces


FIELD = re.compile(r"\x13[^\x13\x14\x15]*(?:\x14([^\x13\x15]*))?\x15")


def _word_markdown(text: str) -> str:
    """Word's control characters to text: fields keep their result, cells become pipes."""
    for _ in range(4):  # nested fields resolve from the inside out
        text = FIELD.sub(lambda m: m.group(1) or "", text)
    lines = (_word_paragraph(p) for p in re.split(r"[\r\x0c]", text))
    return "\n\n".join(line for line in lines if line)


def _word_paragraph(raw: str) -> str:
    text = raw.replace("\x0b", "\n").replace("\x1e", "-").replace("\x1f", "")
    if "\x07" in text:  # cell and row marks: a table row
        text = " | ".join(c.strip() for c in text.split("\x07") if c.strip())
    return re.sub(r"[\x00-\x08\x0e-\x1f]", "", text).strip()


# PowerPoint record types ([MS-PPT] 2.13.24)
SLIDE = 0x03EE
MAIN_MASTER = 0x03F8
NOTES = 0x03F0
TEXT_CHARS = 0x0FA0
TEXT_BYTES = 0x0FA8
CONTAINER = 0x0F


TEXT_HEADER = 0x0F9F
TITLE_TYPES = (0, 6)  # TextHeaderAtom types: title, centered title


@dataclass
class _Slide:
    texts: list[str] = field(default_factory=list)
    title: str = ""
    header: int | None = None  # type of the text that comes next


class PptLoader:
    """PowerPoint 97–2003: text atoms of each slide, one section (page) per slide; the title
    placeholder's text becomes the slide's heading, as for .pptx."""

    mime_types = frozenset({PPT})

    def load(self, data: bytes, name: str) -> Document:
        stream = _read(open_ole(data, name), "PowerPoint Document", name)
        slides: list[_Slide] = []
        _walk_ppt(stream, 0, len(stream), slides, in_slide=False, depth=0)
        pages = []
        for number, slide in enumerate(slides, start=1):
            heading = f"## Slide {number}: {slide.title}" if slide.title else f"## Slide {number}"
            unique = list(dict.fromkeys(t for t in slide.texts if t and t != slide.title))
            pages.append("\n\n".join([heading, *unique]))
        return paged_document(pages, name, PPT)


def _walk_ppt(
    stream: bytes, pos: int, end: int, slides: list[_Slide], in_slide: bool, depth: int
) -> None:
    while pos + 8 <= end and depth < 32:
        ver_inst, rec_type, length = struct.unpack_from("<HHI", stream, pos)
        body, pos = pos + 8, min(end, pos + 8 + length)
        if rec_type in (MAIN_MASTER, NOTES):
            continue  # masters and speaker-note pages repeat placeholder text
        if (ver_inst & 0x0F) == CONTAINER:
            if rec_type == SLIDE:
                slides.append(_Slide())
            _walk_ppt(stream, body, pos, slides, in_slide or rec_type == SLIDE, depth + 1)
        elif in_slide and rec_type == TEXT_HEADER and pos - body >= 4:
            slides[-1].header = struct.unpack_from("<I", stream, body)[0]
        elif in_slide and rec_type in (TEXT_CHARS, TEXT_BYTES):
            encoding = "utf-16-le" if rec_type == TEXT_CHARS else "cp1252"
            raw = stream[body:pos].decode(encoding, errors="replace")
            text = raw.replace("\r", "\n").replace("\x0b", "\n").strip()
            slide = slides[-1]
            if slide.header in TITLE_TYPES and not slide.title and text:
                slide.title = " ".join(text.split())
            slide.texts.append(text)
            slide.header = None


class XlsLoader:
    """Excel 97–2003 workbooks: one Markdown table per sheet."""

    mime_types = frozenset({XLS})

    def load(self, data: bytes, name: str) -> Document:
        import xlrd

        try:
            # every sheet is parsed here, inside the try (on_demand would parse them later)
            # xlrd writes its warnings to stdout unless given a log file of its own
            book = xlrd.open_workbook(file_contents=data, logfile=io.StringIO())
        except Exception as exc:  # xlrd raises its own and struct errors on damaged files
            raise ParseError(f"{name} is not a readable Excel 97-2003 file ({exc}).") from exc
        parts = []
        for sheet in book.sheets():
            rows = (
                [_cell_text(cell, book.datemode) for cell in sheet.row(r)]
                for r in range(sheet.nrows)
            )
            table = markdown_table(rows)
            parts.append(f"## {sheet.name}\n\n{table}" if table else f"## {sheet.name}")
        return Document("\n\n".join(parts), name, XLS)


def _cell_text(cell: Any, datemode: int) -> str:
    import xlrd

    if cell.ctype == xlrd.XL_CELL_NUMBER and float(cell.value).is_integer():
        return str(int(cell.value))
    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            moment = xlrd.xldate.xldate_as_datetime(cell.value, datemode)
            return str(moment.isoformat(sep=" "))
        except (ValueError, OverflowError):
            return str(cell.value)
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return "TRUE" if cell.value else "FALSE"
    empty = cell.ctype in (xlrd.XL_CELL_EMPTY, xlrd.XL_CELL_BLANK)
    return "" if empty else str(cell.value)
