"""The sources role: what brings documents in, and nothing of where they go.

- ``items``: ``SourceItem``, one thing to ingest (a key, a name, its bytes on demand), and
  the files under paths.
- ``registry``: the source kinds by name (``SOURCES``), the ``Source`` protocol a kind
  implements, and ``gather`` (targets → items).
- ``kinds``: the built-in kinds that read once (upload, text, path, url, youtube,
  web-search).
- ``web``: ``WebReader``, the URL fetcher, YouTube transcripts and the web search provider.
- ``connectors/``: the kinds a knowledge base keeps in sync (folder, git, webdav, s3,
  website), their credentials and the stored connectors.

Ingesting what a source brings (the ingestor, connector runs, syncs) is
``citewell.ingest``'s work. Importing this package loads ``items`` alone.
"""

from citewell.sources.items import SourceItem, text_item, walk

__all__ = ["SourceItem", "text_item", "walk"]
