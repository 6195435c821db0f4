"""Chunk sets: a knowledge base with its own chunking reads chunks of its own.

Files are stored once per distinct bytes. KBs on the server's chunking share one chunk set
per file (its chunks carry those KBs' ids). A KB with its own chunking (``settings.chunking``)
gets a set of its own per file, labelled ``{kb id}~{n}`` (``catalog.labels``). The store
only knows labels: searches translate KB ids to the labels in force just before the store
query, and the chunks' labels back to KB ids after it (``where``, ``visible``).

Changing a KB's chunking re-chunks it through the job queue (``rechunk.Rechunker``): one job per
file builds the next set from the stored text (no parsing; unchanged texts are embedded
from the cache) while searches keep reading the current one; when every job is done one
catalog update swaps the label, and the replaced set is deleted once no process can still
be reading it (``LABELS_TTL``). A file added meanwhile gets both sets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from citewell.catalog import Catalog
from citewell.catalog.labels import ChunkLabels, KbChunkSets, kb_of_label
from citewell.config import Settings
from citewell.embedders import Embedder
from citewell.enrich import Enricher
from citewell.ingest.types import ChunkTarget
from citewell.types import ChunkFilter, ScoredChunk

if TYPE_CHECKING:
    from citewell.live_settings import LiveSettings


class ChunkSets:
    """The KBs' chunk sets as ingestion and search need them."""

    def __init__(
        self,
        catalog: Catalog,
        live: LiveSettings,
        enricher: Callable[[Settings], Enricher],
    ) -> None:
        self.catalog = catalog
        self.labels = ChunkLabels(catalog.engine)
        self.live = live
        self._enricher = enricher

    # --- writing ------------------------------------------------------------------------
    def targets(self, kb_id: str, embedder: Embedder) -> tuple[ChunkTarget, ...]:
        """The sets a file added to ``kb_id`` now goes into (two while it is re-chunked)."""
        sets = self.labels.of(kb_id)
        return tuple(self.target(kb_id, label, embedder) for label in sets.writing)

    def target(self, kb_id: str, label: str, embedder: Embedder) -> ChunkTarget:
        shared = label == kb_id
        own: dict[str, Any] = {}
        if not shared:
            own = self.catalog.get_kb(kb_id).settings.chunking_map
        settings = self.live.chunking(own)
        return ChunkTarget(
            label,
            shared,
            self.live.splitter_for(embedder, settings),
            self._enricher(settings),
            settings.retrieval.bm25_enriched_texts,
            settings.retrieval.sentence_vectors,
        )

    def shared_peer(self, file_id: str, kb_id: str) -> str | None:
        """Another KB whose searches read the file's shared set (it exists, then)."""
        for other in self.catalog.kbs_of_file(file_id):
            if other != kb_id and self.labels.of(other).shared:
                return other
        return None

    # --- reading ------------------------------------------------------------------------
    def where(self, where: ChunkFilter) -> ChunkFilter:
        """``where`` (KB ids) as the store's filter (the labels searches read now)."""
        special = self.labels.special()
        if not special:
            return where  # every KB reads the shared set: labels are KB ids
        if where.kb_ids is not None:
            kb_ids: Sequence[str] = where.kb_ids
        elif where.file_ids is not None:
            kb_ids = sorted({k.kb_id for k in self.catalog.links(file_ids=where.file_ids)})
        else:
            kb_ids = [kb.id for kb in self.catalog.list_kbs()]
        if where.file_ids is not None and len(kb_ids) > 1:
            kb_ids = self._one_set_per_file(where.file_ids, kb_ids, special)
        labels = tuple(special[k].label if k in special else k for k in kb_ids)
        return replace(where, kb_ids=labels)

    def _one_set_per_file(
        self, file_ids: Sequence[str], kb_ids: Sequence[str], special: dict[str, KbChunkSets]
    ) -> list[str]:
        """Files searched by id read one chunk set each (the shared one if a KB has it),
        not one per chunking of the KBs holding them."""
        chosen: dict[str, str] = {}
        for link in self.catalog.links(file_ids=file_ids, kb_ids=kb_ids):
            shared = link.kb_id not in special or special[link.kb_id].shared
            held = chosen.get(link.file_id)
            if held is None or (shared and held in special and not special[held].shared):
                chosen[link.file_id] = link.kb_id
        return sorted(set(chosen.values()))

    def visible(self, results: Sequence[ScoredChunk]) -> None:
        """The results' chunks with the KB ids whose searches read them, not labels."""
        special = self.labels.special()
        if not special:
            return
        for result in results:
            kb_ids = tuple(
                kb_of_label(label)
                for label in result.chunk.kb_ids
                if label == special.get(kb_of_label(label), _plain(label)).label
            )
            result.chunk = replace(result.chunk, kb_ids=kb_ids)


def _plain(label: str) -> KbChunkSets:
    return KbChunkSets(kb_of_label(label), kb_of_label(label))
