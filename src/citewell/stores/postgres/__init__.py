"""The server-mode chunk store: pgvector and our own BM25 postings in PostgreSQL, with
versioned chunk tables (``schema``)."""
