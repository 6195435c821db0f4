"""CSV in any encoding (cp932 included) as a Markdown table; JSON pretty-printed."""

from __future__ import annotations

import csv
import io
import json

from citewell.errors import ParseError
from citewell.loaders.tables import markdown_table
from citewell.loaders.text import decode
from citewell.types import Document


class CsvLoader:
    mime_types = frozenset({"text/csv"})

    def load(self, data: bytes, name: str) -> Document:
        text = decode(data, name)
        try:
            dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        rows = list(csv.reader(io.StringIO(text), dialect))
        return Document(markdown_table(rows), name, "text/csv")


class JsonLoader:
    mime_types = frozenset({"application/json"})

    def load(self, data: bytes, name: str) -> Document:
        text = decode(data, name)
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ParseError(f"{name} is not valid JSON ({exc}).") from exc
        return Document(json.dumps(value, indent=2, ensure_ascii=False), name, "application/json")
