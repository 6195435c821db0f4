"""HTML to Markdown-shaped text: the main content, headings as '#', tables as pipe tables."""

from __future__ import annotations

import re
from typing import Any

from citewell.loaders.tables import markdown_table
from citewell.loaders.text import decode
from citewell.types import Document

DROP = [
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "nav",
    "header",
    "footer",
    "aside",
    "form",
    "iframe",
    "button",
]
BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "blockquote",
    "pre",
    "figure",
    "figcaption",
    "dd",
    "dt",
    "address",
    "details",
    "summary",
}
CONTENT = ["article", "section"]  # a <main> header is page chrome (e.g. language lists)
HEADINGS = {f"h{n}": n for n in range(1, 7)}
MAX_DEPTH = 200  # real pages nest a few dozen levels; past this, text is taken flat


def table_markdown(table: Any) -> str:
    rows = [
        [c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])]
        for tr in table.find_all("tr")
    ]
    return markdown_table(rows)


def _render(node: Any, out: list[str], depth: int = 0) -> None:
    name = getattr(node, "name", None)
    if name is None:  # a text node
        text = str(node)
        if text.strip():
            lead = " " if text[0].isspace() else ""
            tail = " " if text[-1].isspace() else ""
            out.append(lead + " ".join(text.split()) + tail)
        return
    if depth > MAX_DEPTH:  # pathological nesting: keep the text, drop the structure
        out.append("\n\n" + node.get_text(" ", strip=True) + "\n\n")
    elif name in HEADINGS:
        out.append("\n\n" + "#" * HEADINGS[name] + " " + node.get_text(" ", strip=True) + "\n\n")
    elif name == "table":
        out.append("\n\n" + table_markdown(node) + "\n\n")
    elif name == "br":
        out.append("\n")
    elif name == "li":
        out.append("\n- ")
        for child in node.children:
            _render(child, out, depth + 1)
        out.append("\n")
    else:
        block = name in BLOCKS or name in {"ul", "ol", "dl", "tr", "hr"}
        if block:
            out.append("\n\n")
        for child in node.children:
            _render(child, out, depth + 1)
        if block:
            out.append("\n\n")


def html_to_markdown(html: str) -> tuple[str, str | None]:
    """(text, title) of an HTML page."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else None
    for tag in soup.find_all(DROP):
        # A page's header/footer is chrome; an article's header holds its title.
        if tag.name not in ("header", "footer") or not tag.find_parent(CONTENT):
            tag.decompose()
    articles = soup.find_all("article")
    root = soup.find("main") or (articles[0] if len(articles) == 1 else None) or soup.body or soup
    out: list[str] = []
    _render(root, out)
    text = re.sub(r"[ \t]+", " ", "".join(out))
    text = re.sub(r" ?\n ?", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, title or None


class HtmlLoader:
    mime_types = frozenset({"text/html"})

    def load(self, data: bytes, name: str) -> Document:
        text, title = html_to_markdown(decode(data, name))
        return Document(text=text, name=name, mime_type="text/html", title=title)
