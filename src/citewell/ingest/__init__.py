"""Ingestion: documents read, split into chunk sets, embedded and written; URLs and web
search results brought in as files; re-chunking."""
