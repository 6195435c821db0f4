"""OpenDocument text (.odt): content.xml walked into Markdown (headings, lists, tables)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from citewell.errors import ParseError
from citewell.loaders.archive import open_zip
from citewell.loaders.tables import markdown_table
from citewell.types import Document

ODT = "application/vnd.oasis.opendocument.text"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"


class OdtLoader:
    mime_types = frozenset({ODT})

    def load(self, data: bytes, name: str) -> Document:
        archive = open_zip(data, name)
        try:
            root = ET.fromstring(archive.read("content.xml"))
        except (KeyError, ET.ParseError) as exc:
            raise ParseError(f"{name} is not a readable OpenDocument file ({exc}).") from exc
        body = root.find(f"{OFFICE}body/{OFFICE}text")
        blocks: list[str] = []
        if body is not None:
            _blocks(body, blocks, depth=0)
        return Document("\n\n".join(b for b in blocks if b), name, ODT)


def _blocks(element: ET.Element, blocks: list[str], depth: int) -> None:
    for child in element:
        tag = child.tag
        if tag == f"{TEXT}h":
            level = min(6, int(child.get(f"{TEXT}outline-level", "1") or 1))
            blocks.append("#" * level + " " + inline_text(child).strip())
        elif tag == f"{TEXT}p":
            blocks.append(inline_text(child).strip())
        elif tag == f"{TEXT}list" and depth < 16:
            for item in child.iter(f"{TEXT}list-item"):
                text = " ".join(inline_text(p).strip() for p in item.findall(f"{TEXT}p"))
                if text:
                    blocks.append("- " + text)
        elif tag == f"{TABLE}table":
            rows = [
                [inline_text(cell).strip() for cell in row.iter(f"{TABLE}table-cell")]
                for row in child.iter(f"{TABLE}table-row")
            ]
            blocks.append(markdown_table(rows))
        elif depth < 16 and tag in (f"{TEXT}section", f"{TEXT}list-item"):
            _blocks(child, blocks, depth + 1)


def inline_text(element: ET.Element) -> str:
    """Text of a paragraph, with ODF's space, tab and line-break elements as characters."""
    parts = [element.text or ""]
    for child in element:
        if child.tag == f"{TEXT}s":
            parts.append(" " * int(child.get(f"{TEXT}c", "1") or 1))
        elif child.tag == f"{TEXT}tab":
            parts.append("\t")
        elif child.tag == f"{TEXT}line-break":
            parts.append("\n")
        elif child.tag != f"{OFFICE}annotation":
            parts.append(inline_text(child))
        parts.append(child.tail or "")
    return "".join(parts)
