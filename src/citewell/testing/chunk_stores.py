"""The chunk store role's conformance suite (kept in ``citewell.testing.conformance``, where
it has always been importable from)."""

from citewell.testing.conformance import ChunkStoreConformance

__all__ = ["ChunkStoreConformance"]
