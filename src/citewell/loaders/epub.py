"""EPUB: the chapters in spine order, each converted like HTML (zip + XML, no extra library)."""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET

from citewell.errors import ParseError
from citewell.loaders.archive import open_zip
from citewell.loaders.html import html_to_markdown
from citewell.types import Document

EPUB = "application/epub+zip"
NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container", "opf": "http://www.idpf.org/2007/opf"}


class EpubLoader:
    mime_types = frozenset({EPUB})

    def load(self, data: bytes, name: str) -> Document:
        archive = open_zip(data, name)
        try:
            container = ET.fromstring(archive.read("META-INF/container.xml"))
            rootfile = container.find(".//c:rootfile", NS)
            opf_path = rootfile.get("full-path", "") if rootfile is not None else ""
            opf = ET.fromstring(archive.read(opf_path))
        except (KeyError, ET.ParseError) as exc:
            raise ParseError(f"{name} is not a readable EPUB ({exc}).") from exc
        base = posixpath.dirname(opf_path)
        items = {
            i.get("id"): i.get("href", "") for i in opf.iterfind(".//opf:manifest/opf:item", NS)
        }
        title = opf.findtext(".//{http://purl.org/dc/elements/1.1/}title")
        chapters = []
        for ref in opf.iterfind(".//opf:spine/opf:itemref", NS):
            href = items.get(ref.get("idref"))
            if not href:
                continue
            try:
                html = archive.read(posixpath.normpath(posixpath.join(base, href)))
            except KeyError:
                continue
            text, _ = html_to_markdown(html.decode("utf-8", errors="replace"))
            if text.strip():
                chapters.append(text)
        return Document("\n\n".join(chapters), name, EPUB, title=title)
