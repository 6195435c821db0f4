"""What the model is told about the builtin tools (OpenAI's function-tool format). Names and
arguments are Open WebUI 0.12.4's, so prompts and habits written for it carry over."""

from __future__ import annotations

from typing import Any


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Any:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_STR = {"type": "string"}
_INT = {"type": "integer"}
_QUERY = {"type": "string", "description": "What to look for."}
_COUNT = {"type": "integer", "description": "How many results (default 5)."}
_SKIP = {"type": "integer", "description": "Results to skip, for paging (default 0)."}

KNOWLEDGE_TOOLS = [
    _tool(
        "list_knowledge_bases",
        "List the knowledge bases you can use: id, name, description, file count.",
        {"count": _INT, "skip": _SKIP},
        [],
    ),
    _tool(
        "search_knowledge_bases",
        "Find knowledge bases whose name or description contains the query's words.",
        {"query": _QUERY, "count": _COUNT, "skip": _SKIP},
        ["query"],
    ),
    _tool(
        "query_knowledge_bases",
        "Rank knowledge bases by how close their name and description are in meaning to the "
        "query: which one to search next.",
        {"query": _QUERY, "count": _COUNT},
        ["query"],
    ),
    _tool(
        "search_knowledge_files",
        "Find files by name in the knowledge bases (optionally in one of them).",
        {"query": _QUERY, "knowledge_id": _STR, "count": _COUNT, "skip": _SKIP},
        ["query"],
    ),
    _tool(
        "list_knowledge",
        "What knowledge is available: the knowledge bases, or with knowledge_id the files of "
        "one knowledge base (paged with skip and count, at most 200).",
        {"knowledge_id": _STR, "skip": _SKIP, "count": _INT},
        [],
    ),
    _tool(
        "query_knowledge_files",
        "Search the documents' text (hybrid keyword and semantic search) and get the best "
        "passages. Each has a source_id: cite it as [source_id] in the answer.",
        {
            "query": _QUERY,
            "knowledge_ids": {"type": "array", "items": _STR, "description": "Limit to these."},
            "count": _COUNT,
        },
        ["query"],
    ),
    _tool(
        "view_knowledge_file",
        "Read a file's extracted text, a page at a time (offset and max_chars, or start_line "
        "and end_line). The page has a source_id: cite it as [source_id].",
        {
            "file_id": _STR,
            "offset": _INT,
            "max_chars": _INT,
            "line_numbers": {"type": "boolean"},
            "start_line": _INT,
            "end_line": _INT,
        },
        ["file_id"],
    ),
]

WEB_TOOLS = [
    _tool(
        "search_web",
        "Search the web; the best passages of the result pages come back, each with a "
        "source_id to cite as [source_id].",
        {"query": _QUERY, "count": _COUNT},
        ["query"],
    ),
    _tool(
        "fetch_url",
        "Fetch a web page and read the start of its text (cite it by its source_id).",
        {"url": {"type": "string", "description": "An http(s) URL."}},
        ["url"],
    ),
]

BUILTIN_TOOL_NAMES = frozenset(t["function"]["name"] for t in [*KNOWLEDGE_TOOLS, *WEB_TOOLS])
