"""What can be ingested (``SourceItem``): files found under paths, or texts handed over."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from citewell.errors import InvalidInput
from citewell.loaders import supported_extensions


@dataclass(frozen=True)
class SourceItem:
    """One thing to ingest: a key (its path or name, unique within a KB) and its bytes."""

    key: str
    name: str
    read: Callable[[], bytes]
    mime_type: str | None = None
    source: str = "upload"  # upload, text, url, web-search or youtube
    url: str = ""
    reader_name: str = ""  # the name the loaders see (its extension tells the type), if not name
    added_by: str = ""  # the user adding it ("" for the local operator)


def _wanted(path: Path) -> bool:
    return path.suffix.lower() in supported_extensions() or path.suffix == ""


def walk(paths: Sequence[Path]) -> Iterator[SourceItem]:
    """Files under ``paths`` (recursing into folders, skipping hidden entries), sorted."""
    for root in paths:
        if not root.exists():
            raise InvalidInput(f"{root} does not exist; check the path.")
        if root.is_file():
            yield _item(root)
            continue
        for directory, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = Path(directory) / name
                if not name.startswith(".") and _wanted(path):
                    yield _item(path)


def _item(path: Path) -> SourceItem:
    resolved = path.resolve()
    return SourceItem(key=str(resolved), name=path.name, read=resolved.read_bytes)


def text_item(name: str, text: str, mime_type: str = "text/plain") -> SourceItem:
    data = text.encode("utf-8")
    return SourceItem(key=name, name=name, read=lambda: data, mime_type=mime_type, source="text")
