"""Search results described by the link they were found through.

A chunk carries the name its bytes were first stored under; a result shows the name (after
its folder: ``docs/api/auth.md``) and URL of the file's link in the KB it was found in, so
identical bytes added by another tenant under another name or from another URL never show
theirs (issue 45).

The catalog also says which files a KB holds: a result found in a KB that has no link to
its file is left out. A changed file's new chunks and the old file's removal are separate
writes to the chunk table, but the link at its path moves from the old file to the new in
one catalog transaction, so a search never shows both versions (nor chunks written for a
file whose link is not in yet).
"""

from __future__ import annotations

from dataclasses import replace

from citewell.catalog import Catalog, FileLink
from citewell.catalog.folders import folder_of, join
from citewell.types import ScoredChunk


def shown_name(link: FileLink) -> str:
    """The link's name, after its folder in the KB ("docs/api/auth.md") if it has one."""
    folder = folder_of(link.path)
    name = link.name or (link.path.rsplit("/", 1)[-1] if folder else "")
    return join(folder, name) if folder and name else name


def describe_as_linked(catalog: Catalog, results: list[ScoredChunk]) -> list[ScoredChunk]:
    """The results whose KB links their file, each with the file name and ``url`` of its
    link (set in place); results found in no particular KB are all kept."""
    file_ids = {r.chunk.file_id for r in results}
    links = catalog.links(file_ids=file_ids, kb_ids={r.kb_id for r in results if r.kb_id})
    by_key = {(k.kb_id, k.file_id): k for k in links}
    linked = [r for r in results if not r.kb_id or (r.kb_id, r.chunk.file_id) in by_key]
    older = []  # results whose link predates links knowing their source and URL
    for result in linked:
        link = by_key.get((result.kb_id or "", result.chunk.file_id))
        shown = shown_name(link) if link is not None else ""
        if shown and shown != result.chunk.file_name:
            result.chunk = replace(result.chunk, file_name=shown)
        if link is not None and link.source:
            result.url = link.url
        else:
            older.append(result)
    if older:  # the file's own URL, read only for those (a cold read costs per file)
        records = {r.id: r for r in catalog.files_by_id({r.chunk.file_id for r in older})}
        for result in older:
            record = records.get(result.chunk.file_id)
            result.url = record.url if record is not None else ""
    return linked
