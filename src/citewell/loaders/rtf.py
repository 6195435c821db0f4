"""RTF through striprtf (BSD); its cell-separated rows are turned into Markdown tables."""

from __future__ import annotations

from citewell.errors import ParseError
from citewell.loaders.tables import markdown_table
from citewell.types import Document

RTF = "application/rtf"


class RtfLoader:
    mime_types = frozenset({RTF, "text/rtf"})

    def load(self, data: bytes, name: str) -> Document:
        from striprtf.striprtf import rtf_to_text

        try:
            raw = data.decode("latin-1")
            text: str = rtf_to_text(raw, errors="replace")  # type: ignore[no-untyped-call]
        except Exception as exc:  # striprtf raises plain errors on damaged groups
            raise ParseError(f"{name} is not readable RTF ({exc}).") from exc
        return Document(_tables_to_markdown(text), name, RTF)


def _tables_to_markdown(text: str) -> str:
    """striprtf ends every table cell with '|': runs of such lines become one pipe table."""
    out: list[str] = []
    rows: list[list[str]] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.endswith("|"):
            rows.append(line[:-1].split("|"))
            continue
        if rows:
            out.extend(["", markdown_table(rows), ""])
            rows = []
        out.append(line.strip())
    if rows:
        out.extend(["", markdown_table(rows)])
    return "\n".join(out).strip()
