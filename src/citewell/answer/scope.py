"""What one chat searches: the KBs and files it names (and its preset's), pages fetched from
'#https://…' references in the message, and pages a web search brings in. Unknown names and
failed fetches become warnings, not errors; nothing widens what the caller may read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from citewell.answer.exchange import ChatRequest
from citewell.catalog.preset import ModelPreset
from citewell.engine.core import Engine
from citewell.engine.scoped import Scoped
from citewell.errors import CitewellError
from citewell.ingest.web import WEB_KB, WEB_SEARCH_KB
from citewell.types import ChunkFilter

MAX_URL_REFS = 5  # '#https://…' references fetched from one message


def fetch_url_pages(
    app: Engine, view: Scoped, urls: list[str], warnings: list[str]
) -> list[tuple[str, str]]:
    """'#https://…' in the message: each page is fetched into the caller's 'web' KB and
    searched with the rest of the scope. A page that cannot be fetched is a warning."""
    pages = []
    for url in urls[:MAX_URL_REFS]:
        try:
            with view.target_kb(None, WEB_KB) as kb:
                done = app.ingest_url(url, kb.id, added_by=view.access.user_id)
        except CitewellError as exc:
            warnings.append(f"{url}: {exc.message}")
            continue
        pages.append((done.record.id, done.title))
    return pages


def search_the_web(
    app: Engine, view: Scoped, queries: list[str], warnings: list[str], trace: dict[str, Any]
) -> list[ChunkFilter]:
    try:
        with view.target_kb(None, WEB_SEARCH_KB) as kb:
            outcome = app.web_search(queries, kb.id)
    except CitewellError as exc:
        warnings.append(f"web search: {exc.message}")
        return []
    warnings.extend(f"web search: {e}" for e in outcome.errors)
    warnings.extend(f"{h.result.url}: {h.error}" for h in outcome.hits if h.error)
    trace["web_search"] = [h.result.url for h in outcome.hits if h.file is not None]
    ids = tuple(dict.fromkeys(f.id for f in outcome.files))
    return [ChunkFilter(file_ids=ids)] if ids else []


def chat_scope(
    view: Scoped,
    request: ChatRequest,
    preset: ModelPreset | None,
    warnings: list[str],
    fetched: Sequence[str] = (),
) -> list[ChunkFilter] | None:
    """Filters for the KBs and files in scope; unknown ones become warnings, not errors.
    ``fetched`` are files just fetched from the message's URLs. A preset's KBs are only
    those the caller may read too: a preset never widens access."""
    kb_ids = []
    from_preset = preset.knowledge if preset else ()
    for name in (*from_preset, *request.knowledge):
        kb = view.find_kb(name, count_files=False)
        if kb is None and name not in from_preset:  # a preset's others stay unnamed
            warnings.append(f"knowledge collection {name!r} not found")
        elif kb is not None and kb.id not in kb_ids:
            kb_ids.append(kb.id)
    file_ids = list(dict.fromkeys(fetched))
    for file_id in request.file_ids:
        try:
            record = view.file(file_id)
        except CitewellError:
            warnings.append(f"file {file_id!r} not found")
            continue
        if record.id not in file_ids:
            file_ids.append(record.id)
    filters = []
    if kb_ids:
        filters.append(ChunkFilter(kb_ids=tuple(kb_ids)))
    if file_ids:
        filters.append(ChunkFilter(file_ids=tuple(file_ids)))
    return filters or None
