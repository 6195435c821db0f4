"""Connectors: sources whose contents a knowledge base keeps in sync with (a folder on the
server's disk, a git repository, ...). A source kind that can be synced lists its entries,
each with a version that changes when its content may have; ``ingest.sync`` compares that
listing with the KB's links and adds, changes, renames and deletes what differs.
"""

from citewell.sources.connectors.entries import Listing, Reader, Syncable, SyncEntry, SyncRequest

__all__ = ["Listing", "Reader", "SyncEntry", "SyncRequest", "Syncable"]
