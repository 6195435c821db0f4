"""Knowledge bases and files as MCP resources: ``citewell://kb/{id}`` (its files, one per
line) and ``citewell://file/{id}`` (the extracted text), listed for the caller."""

from __future__ import annotations

from typing import Any

from citewell.errors import NotFoundError
from citewell.services.agent_tools import AgentTools, FileItem

MAX_LISTED_FILES = 1000  # per KB: resources are for browsing; list_files pages the rest


def list_resources(tools: AgentTools) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for kb in tools.knowledge_bases().knowledge_bases:
        found.append(
            {
                "uri": f"citewell://kb/{kb.id}",
                "name": kb.name,
                "description": kb.description or f"The files of the knowledge base {kb.name}",
                "mime_type": "text/plain",
            }
        )
        for file in _files(tools, kb.id):
            found.append(
                {
                    "uri": f"citewell://file/{file.file_id}",
                    "name": file.path,
                    "description": f"{file.path} in {kb.name}",
                    "mime_type": "text/plain",
                }
            )
    return found


def read_resource(tools: AgentTools, uri: str) -> tuple[str, str]:
    """(text, MIME type) of a resource the caller may read; else not found."""
    kind, _, ident = uri.removeprefix("citewell://").partition("/")
    if kind == "kb" and ident:
        lines = [f"{f.path}\tcitewell://file/{f.file_id}" for f in _files(tools, ident)]
        return "\n".join(lines), "text/plain"
    if kind == "file" and ident:
        text, _sections = tools.view.file_text_and_sections(ident)
        return text, "text/plain"
    raise NotFoundError(f"No resource {uri!r}; resources/list shows yours.")


def _files(tools: AgentTools, kb: str) -> list[FileItem]:
    """The KB's files, up to MAX_LISTED_FILES."""
    files: list[FileItem] = []
    page = 1
    while len(files) < MAX_LISTED_FILES:
        listed = tools.list_files(kb, None, page)
        files += listed.files
        if page >= listed.pages:
            break
        page += 1
    return files[:MAX_LISTED_FILES]
