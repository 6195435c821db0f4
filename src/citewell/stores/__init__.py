"""Chunk stores: where chunks, vectors and keyword statistics live (LanceDB or PostgreSQL)."""
