"""In-memory search over a copy of a chunk table (or of one KB's part of it): exact and
IVF vector search, BM25 postings, and what keeps the copies fresh. Both backends use it."""
