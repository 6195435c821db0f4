"""Linking stored files into a knowledge base, many at once.

A file whose bytes are already stored is not parsed or embedded again: it joins the KB.
Its chunks in the shared set get the KB's label (one store update for a whole batch of
files, grouped by the KB whose set they join: an update rewrites what it touches, so one
per file cost more than ingesting the file), and the catalog gets one link row per path.
A KB with its own chunking gets its own set of each file from the stored text instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from citewell.catalog import Catalog, FileRecord
from citewell.catalog.labels import ChunkLabels
from citewell.ingest.types import ChunkTarget
from citewell.sources import SourceItem

LINKS_PER_FLUSH = 1000  # links gathered in an ingest run before they are written


@dataclass(frozen=True)
class PendingLink:
    """A stored file to link under an item's path; ``previous``: the file the path held."""

    item: SourceItem
    file_id: str
    previous: FileRecord | None = None


@dataclass
class LinkPlan:
    """What linking a batch takes: store updates (files joining the shared set that a peer
    KB already reads, by (label, peer)) and sets to write from stored text."""

    joins: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    writes: list[tuple[str, ChunkTarget]] = field(default_factory=list)


def plan_links(
    catalog: Catalog,
    labels: ChunkLabels,
    kb_id: str,
    file_ids: Sequence[str],
    targets: Sequence[ChunkTarget],
) -> LinkPlan:
    """Decide, for files going into ``kb_id``, which of the KB's ``targets`` (chunk sets)
    each needs: none where the KB already holds the file under another path (its current
    set is there), a join where another KB reads the shared set, else a set of its own."""
    unique = list(dict.fromkeys(file_ids))
    holders: dict[str, set[str]] = {f: set() for f in unique}
    for link in catalog.links(file_ids=unique):
        holders[link.file_id].add(link.kb_id)
    shared: dict[str, bool] = {}

    def reads_shared(other: str) -> bool:
        if other not in shared:
            shared[other] = labels.of(other).shared
        return shared[other]

    current = labels.of(kb_id).label
    plan = LinkPlan()
    for file_id in unique:
        held = kb_id in holders[file_id]
        peers = sorted(k for k in holders[file_id] if k != kb_id)
        for target in targets:
            if held and target.label == current:
                continue  # another path of the KB has this set already
            peer = next((k for k in peers if reads_shared(k)), None) if target.shared else None
            if peer is None:
                plan.writes.append((file_id, target))
            else:
                plan.joins.setdefault((target.label, peer), []).append(file_id)
    return plan
