"""How the embedded store tells that an in-memory KB copy is still current
(memory/kb_copies.py has the copies themselves).

Lance never changes a fragment's data in place (a write adds fragments; a delete or update
gives a fragment a new deletion file or new files; fragment ids are not reused), so at a
later version a copy still holds exactly its filter's rows when its own fragments are
unchanged and no fragment added since holds a row of its KBs. That check reads the
manifest and the ``kb_ids`` of new fragments only. A copy's marks are the stamps of the
fragments holding its rows and every fragment id of the table at its version.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from citewell.stores.memory.kb_copies import KbCopy, Key
from citewell.stores.memory.snapshot import SNAPSHOT_COLUMNS, TableSnapshot

Stamp = tuple[tuple[str, ...], str]  # a fragment's data files and deletion file


@dataclass(frozen=True)
class Fragments:
    """``holding``: the stamps of the fragments holding a copy's rows; ``seen``: every
    fragment id of the table at the copy's version."""

    holding: dict[int, Stamp]
    seen: frozenset[int]


def _stamp(fragment: Any) -> Stamp:
    meta = fragment.metadata
    deletion = meta.deletion_file
    files = tuple(sorted(f.path for f in meta.files))
    return files, "" if deletion is None else repr(deletion)


def _kb_predicate(key: Key) -> str:
    kbs = ", ".join("'" + k.replace("'", "''") + "'" for k in sorted(key))
    return f"array_has_any(kb_ids, [{kbs}])"


class LanceKbSource:
    """``open_dataset()``: the table as a Lance dataset at its latest version;
    ``version()``: the table's version (cheap)."""

    def __init__(
        self, open_dataset: Callable[[], Any], version: Callable[[], int], dimension: int
    ) -> None:
        self._open, self.version, self._dimension = open_dataset, version, dimension

    @contextlib.contextmanager
    def view(self) -> Iterator[LanceKbView]:
        yield LanceKbView(self._open(), self._dimension)


class LanceKbView:
    def __init__(self, dataset: Any, dimension: int) -> None:
        self._dataset, self._dimension = dataset, dimension
        self.version = int(dataset.version)
        self._fragments = {f.fragment_id: f for f in dataset.get_fragments()}
        self._new_kbs: dict[int, set[str]] = {}

    def keep(self, copies: dict[Key, KbCopy]) -> dict[Key, KbCopy]:
        kept: dict[Key, KbCopy] = {}
        for key, copy in copies.items():
            if copy.covers == self.version:
                kept[key] = copy
            elif self._unchanged(key, copy.marks):
                marks = replace(copy.marks, seen=frozenset(self._fragments))
                kept[key] = replace(copy, marks=marks, covers=self.version)
        return kept

    def _unchanged(self, key: Key, marks: Fragments) -> bool:
        fragments = self._fragments
        if any(
            fid not in fragments or _stamp(fragments[fid]) != stamp
            for fid, stamp in marks.holding.items()
        ):
            return False  # rows of its own deleted, updated or moved by a compaction
        added = fragments.keys() - marks.seen
        for fid in added - self._new_kbs.keys():
            column = fragments[fid].to_table(columns=["kb_ids"])["kb_ids"]
            self._new_kbs[fid] = {kb for kbs in column.to_pylist() for kb in kbs or ()}
        return not any(self._new_kbs[fid] & key for fid in added)  # rows added to its KBs?

    def load(self, key: Key) -> KbCopy | None:
        data = self._dataset.to_table(
            columns=SNAPSHOT_COLUMNS, filter=_kb_predicate(key), with_row_address=True
        )
        if data.num_rows == 0:
            return None
        addresses = data["_rowaddr"].to_numpy()
        holding = {int(f) for f in np.unique(addresses >> 32)}
        data = data.drop_columns(["_rowaddr"])
        snapshot = TableSnapshot.from_arrow(self.version, data, self._dimension)
        stamps = {fid: _stamp(self._fragments[fid]) for fid in holding}
        marks = Fragments(stamps, frozenset(self._fragments))
        return KbCopy(key, snapshot, self.version, marks)
