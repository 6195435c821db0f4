"""'#https://…' in a chat message: Open WebUI's way to chat with a web page."""

from __future__ import annotations

import re

URL_REF = re.compile(r"(?<!\S)#(https?://[^\s<>\"']+)")


def url_refs(text: str) -> list[str]:
    """URLs written as '#https://…' in a message (Open WebUI's way to chat with a page)."""
    return list(dict.fromkeys(m.group(1).rstrip(".,;:!?)") for m in URL_REF.finditer(text)))


def without_refs(text: str) -> str:
    return " ".join(URL_REF.sub(" ", text).split())


def plain_refs(text: str) -> str:
    """'#https://…' as a plain URL: the '#' is an instruction to Citewell, not to the LLM."""
    return URL_REF.sub(r"\1", text)
