"""The builtin knowledge tools a model may call in native function calling, with Open WebUI's
names and arguments (so its prompts carry over). Every tool runs as the caller, through
``Scoped``: within the KBs and files in scope, never beyond what the caller may read. Bad
arguments come back to the model as ``{"error": ...}``, never as an exception.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from citewell.answer.context import CitedSource, chunk_source
from citewell.answer.tool_specs import KNOWLEDGE_TOOLS, WEB_TOOLS
from citewell.catalog import FileRecord, KnowledgeBase
from citewell.engine.scoped import Scoped
from citewell.errors import CitewellError
from citewell.ingest.web import WEB_KB, WEB_SEARCH_KB
from citewell.types import ChunkFilter

VIEW_MAX_CHARS = 20_000  # one view_knowledge_file page, whatever the model asks for
VIEW_DEFAULT_CHARS = 10_000
MAX_COUNT = 50


class ToolError(Exception):
    """A tool call that cannot run: the message goes back to the model as the result."""


@dataclass(frozen=True)
class ToolScope:
    """What the tools may reach: these KBs (None: every KB the caller may read) and files."""

    kb_ids: tuple[str, ...] | None = None
    file_ids: tuple[str, ...] = ()

    @classmethod
    def of(cls, scope: list[ChunkFilter] | None, named: bool) -> ToolScope:
        """The request's and preset's KBs and files; all the caller's KBs when none were
        named, none when those named are not readable (a preset never widens access, nor
        does naming what one cannot read)."""
        if scope is None:
            return cls((), ()) if named else cls()
        kb_ids = tuple(k for f in scope for k in f.kb_ids or ())
        return cls(kb_ids, tuple(i for f in scope for i in f.file_ids or ()))


@dataclass
class ToolResult:
    content: str  # what the model reads: JSON
    passages: list[CitedSource] = field(default_factory=list)  # numbered sources, for citations


class SourceBook:
    """The numbered sources of one answer: those injected first, then those tools find. A
    passage seen before keeps its number, so [n] means one thing for the whole answer."""

    def __init__(self, sources: list[CitedSource]) -> None:
        self.sources = sources  # the answer's own list, grown in place
        self._numbers = {_key(s): s.number for s in sources}

    def add(self, source: CitedSource) -> CitedSource:
        number = self._numbers.get(_key(source))
        if number is not None:
            return self.sources[number - 1]
        numbered = replace(source, number=len(self.sources) + 1)
        self._numbers[_key(numbered)] = numbered.number
        self.sources.append(numbered)
        return numbered


def _key(source: CitedSource) -> tuple[str, int, int]:
    return (source.file_id, source.start, source.end)


class KnowledgeTools:
    def __init__(self, view: Scoped, scope: ToolScope, book: SourceBook, web: bool) -> None:
        self.view = view
        self.app = view.app
        self.scope = scope
        self.book = book
        self.web = web
        self._runners: dict[str, Callable[[dict[str, Any]], Any]] = {
            "list_knowledge_bases": self.list_knowledge_bases,
            "search_knowledge_bases": self.search_knowledge_bases,
            "query_knowledge_bases": self.query_knowledge_bases,
            "search_knowledge_files": self.search_knowledge_files,
            "list_knowledge": self.list_knowledge,
            "query_knowledge_files": self.query_knowledge_files,
            "view_knowledge_file": self.view_knowledge_file,
        }
        if web:
            self._runners["search_web"] = self.search_web
            self._runners["fetch_url"] = self.fetch_url

    def definitions(self) -> list[dict[str, Any]]:
        return [*KNOWLEDGE_TOOLS, *(WEB_TOOLS if self.web else [])]

    def names(self) -> set[str]:
        return set(self._runners)

    def run(self, name: str, arguments: str) -> ToolResult:
        """One call; its result as JSON for the model, and the passages it found."""
        self._found: list[CitedSource] = []
        try:
            args = json.loads(arguments or "{}")
            if not isinstance(args, dict):
                raise ToolError("arguments must be a JSON object")
            value = self._runners[name](args)
        except (ValueError, ToolError, CitewellError) as exc:
            message = exc.message if isinstance(exc, CitewellError) else str(exc)
            value = {"error": message}
        return ToolResult(json.dumps(value, ensure_ascii=False), self._found)

    # --- knowledge bases -------------------------------------------------------------------
    def list_knowledge_bases(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        skip, count = _int(args, "skip", 0), _count(args, 10)
        return [_kb_public(kb) for kb in self._kbs()[skip : skip + count]]

    def search_knowledge_bases(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        words = _str(args, "query").lower().split()
        skip, count = _int(args, "skip", 0), _count(args, 5)
        hits = [kb for kb in self._kbs() if _matches(f"{kb.name} {kb.description}", words)]
        return [_kb_public(kb) for kb in hits[skip : skip + count]]

    def query_knowledge_bases(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """KBs ranked by the meaning of their name and description."""
        query, count = _str(args, "query"), _count(args, 5)
        kbs = self._kbs()
        if not kbs:
            return []
        embedder = self.app.embedder
        texts = [f"{kb.name}: {kb.description}" for kb in kbs]
        with self.view.tenant():
            vectors = np.asarray(embedder.embed(texts))
            scores = vectors @ np.asarray(embedder.embed([query], kind="query"))[0]
        ranked = sorted(zip(scores.tolist(), kbs, strict=True), key=lambda p: -p[0])[:count]
        return [{**_kb_public(kb), "similarity": round(score, 4)} for score, kb in ranked]

    # --- files -------------------------------------------------------------------------------
    def search_knowledge_files(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        words = _str(args, "query").lower().split()
        skip, count = _int(args, "skip", 0), _count(args, 5)
        files = self._files(_opt_str(args, "knowledge_id"))
        hits = [f for f in files if _matches(f.name, words)]
        return [_file_public(f) for f in hits[skip : skip + count]]

    def list_knowledge(self, args: dict[str, Any]) -> dict[str, Any]:
        kb_id = _opt_str(args, "knowledge_id")
        if kb_id is None:
            loose = [_file_public(f) for f in self._loose_files()]
            return {"knowledge_bases": [_kb_public(kb) for kb in self._kbs()], "files": loose}
        skip, count = _int(args, "skip", 0), min(_int(args, "count", 50), 200)
        files = self._files(kb_id)
        page = [_file_public(f) for f in files[skip : skip + count]]
        return {"knowledge_base": _kb_public(self._kb(kb_id)), "files": page, "total": len(files)}

    def query_knowledge_files(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """The main tool: hybrid search of the chunks in scope; each hit becomes a source."""
        query, count = _str(args, "query"), _count(args, 5)
        wanted = args.get("knowledge_ids")
        if wanted is not None and not (
            isinstance(wanted, list) and all(isinstance(k, str) for k in wanted)
        ):
            raise ToolError("knowledge_ids must be a list of knowledge base ids")
        where = self._where(tuple(self._kb(k).id for k in wanted) if wanted else None)
        results = []
        for scope in where:
            results.extend(self.view.search(self.app.clip_query(query), scope, k=count))
        results.sort(key=lambda r: -(r.rerank_score if r.rerank_score is not None else r.score))
        hits = []
        for result in results[:count]:
            record = self.app.catalog.get_file(result.chunk.file_id)
            source = self._cite(chunk_source(result, _mime(record), result.url))
            hits.append(_passage(source))
        return hits

    def view_knowledge_file(self, args: dict[str, Any]) -> dict[str, Any]:
        record = self._readable(_str(args, "file_id"))
        text = self.app.storage.text(record.id) or ""
        start, end, lines = _window(text, args)
        piece = text[start:end]
        if _bool(args, "line_numbers") or lines:
            first = text.count("\n", 0, start) + 1
            piece = "\n".join(f"{first + i}: {line}" for i, line in enumerate(piece.split("\n")))
        source = self._cite(_whole(record, text[start:end], start))
        result: dict[str, Any] = {**_passage(source), "content": piece, "total_chars": len(text)}
        if end < len(text):
            result["truncated"] = True
            result["next_offset"] = end
        return result

    # --- web ---------------------------------------------------------------------------------
    def search_web(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        query, count = _str(args, "query"), _count(args, 5)
        with self.view.target_kb(None, WEB_SEARCH_KB) as kb:
            outcome = self.app.web_search([query], kb.id, count, for_tools=True)
        if not outcome.files:
            return [{"error": e} for e in outcome.errors] or []
        scope = ChunkFilter(file_ids=tuple(f.id for f in outcome.files))
        hits = []
        for result in self.view.search(self.app.clip_query(query), scope, k=count):
            record = self.app.catalog.get_file(result.chunk.file_id)
            hits.append(_passage(self._cite(chunk_source(result, _mime(record), result.url))))
        return hits

    def fetch_url(self, args: dict[str, Any]) -> dict[str, Any]:
        url = _str(args, "url")
        if not self.app.web.reader.tool_may_reach(url):
            # A document could ask the model to fetch a URL carrying the reader's data.
            raise ToolError(
                f"fetch_url may only reach {self.app.settings.answering.tool_web_domains} "
                "(tool_web_domains); answer without this page"
            )
        with self.view.target_kb(None, WEB_KB) as kb:
            done = self.app.ingest_url(url, kb.id, added_by=self.view.access.user_id)
        text = self.app.storage.text(done.record.id) or ""
        piece = text[:VIEW_DEFAULT_CHARS]
        source = self._cite(_whole(done.record, piece, 0))
        return {**_passage(source), "title": done.title, "total_chars": len(text)}

    # --- scope ---------------------------------------------------------------------------------
    def _kbs(self) -> list[KnowledgeBase]:
        kbs = self.view.kbs()
        if self.scope.kb_ids is None:
            return kbs
        return [kb for kb in kbs if kb.id in self.scope.kb_ids]

    def _kb(self, kb_id: str) -> KnowledgeBase:
        for kb in self._kbs():
            if kb_id in (kb.id, kb.name):
                return kb
        raise ToolError(f"no knowledge base {kb_id!r} here; list_knowledge_bases lists them")

    def _files(self, kb_id: str | None) -> list[FileRecord]:
        kb_ids = (self._kb(kb_id).id,) if kb_id else tuple(kb.id for kb in self._kbs())
        files = self.view.files_in(kb_ids)
        return files if kb_id else [*files, *self._loose_files()]

    def _loose_files(self) -> list[FileRecord]:
        return [r for r in map(self.view.readable_file, self.scope.file_ids) if r is not None]

    def _readable(self, file_id: str) -> FileRecord:
        for record in self._files(None):
            if record.id == file_id:
                return record
        raise ToolError(f"no file {file_id!r} here; list_knowledge lists the files")

    def _where(self, chosen: tuple[str, ...] | None) -> list[ChunkFilter]:
        """Filters for a search: the chosen KBs, else every KB and file in scope. An empty
        id list would mean 'no filter' to a store, so none is ever sent."""
        kb_ids = chosen if chosen is not None else tuple(kb.id for kb in self._kbs())
        where = [ChunkFilter(kb_ids=kb_ids)] if kb_ids else []
        if chosen is None and self.scope.file_ids:
            where.append(ChunkFilter(file_ids=self.scope.file_ids))
        return where

    def _cite(self, source: CitedSource) -> CitedSource:
        numbered = self.book.add(source)
        self._found.append(numbered)
        return numbered


def _kb_public(kb: KnowledgeBase) -> dict[str, Any]:
    return {
        "id": kb.id,
        "name": kb.name,
        "description": kb.description,
        "file_count": kb.file_count,
    }


def _file_public(record: FileRecord) -> dict[str, Any]:
    return {"id": record.id, "filename": record.name, "status": record.status}


def _passage(source: CitedSource) -> dict[str, Any]:
    """A passage as the model reads it: cite it as [source_id]."""
    passage = {
        "source_id": source.number,
        "content": source.text,
        "source": source.url or source.file_name,
        "file_id": source.file_id,
        "score": round(source.score, 4),
    }
    if source.page:
        passage["page"] = source.page
    return passage


def _whole(record: FileRecord, text: str, start: int) -> CitedSource:
    return CitedSource(
        0,
        text,
        record.id,
        record.name,
        record.mime_type,
        None,
        start,
        start + len(text),
        1.0,
        None,
        None,
        record.url,
    )


def _mime(record: FileRecord | None) -> str:
    return record.mime_type if record else ""


def _window(text: str, args: dict[str, Any]) -> tuple[int, int, bool]:
    """The [start, end) chars to show: by lines when start_line/end_line are given."""
    if args.get("start_line") is not None or args.get("end_line") is not None:
        lines = text.split("\n")
        first = max(1, _int(args, "start_line", 1)) - 1
        last = min(len(lines), _int(args, "end_line", first + 100))
        start = sum(len(line) + 1 for line in lines[:first])
        end = min(len(text), start + sum(len(line) + 1 for line in lines[first:last]))
        return start, min(end, start + VIEW_MAX_CHARS), True
    start = min(max(0, _int(args, "offset", 0)), len(text))
    size = min(max(1, _int(args, "max_chars", VIEW_DEFAULT_CHARS)), VIEW_MAX_CHARS)
    return start, min(len(text), start + size), False


def _matches(text: str, words: list[str]) -> bool:
    low = text.lower()
    return all(w in low for w in words)


def _str(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolError(f"{name} must be a non-empty string")
    return value.strip()


def _opt_str(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"{name} must be a string")
    return value


MAX_INT_ARGUMENT = 10**9  # offsets, counts and line numbers: beyond any text held


def _int(args: dict[str, Any], name: str, default: int) -> int:
    value = args.get(name, default)
    if value is None:
        return default
    try:
        number = int(value)  # models send "5" as often as 5
    except (TypeError, ValueError, OverflowError):  # OverflowError: 1e400 arrives as inf
        raise ToolError(f"{name} must be an integer") from None
    if not 0 <= number <= MAX_INT_ARGUMENT:
        raise ToolError(f"{name} must be from 0 to {MAX_INT_ARGUMENT}")
    return number


def _count(args: dict[str, Any], default: int) -> int:
    return min(max(1, _int(args, "count", default)), MAX_COUNT)


def _bool(args: dict[str, Any], name: str) -> bool:
    value = args.get(name, False)
    return value in (True, "true", "True", 1)
