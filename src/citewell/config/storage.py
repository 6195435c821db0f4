"""The ``storage`` section: where the data dir, database and chunk store are."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from citewell.config.fields import Section, backend, setting


def default_data_dir() -> Path:
    """Where data lives when nothing says otherwise: the per-user XDG data directory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "citewell"


class StorageSection(Section):
    """Where data lives and how chunk tables are kept in memory."""

    data_dir: Path = setting(
        None,
        "Directory for the metadata database, the chunk store and the embedding cache. "
        "Defaults to $XDG_DATA_HOME/citewell (~/.local/share/citewell).",
    )

    database_url: str = setting(
        "",
        "SQLAlchemy URL of the database for the catalog, jobs, users, keys and grants, e.g. "
        "postgresql://user:password@host/citewell. Empty: a SQLite file in the data dir "
        "(citewell.sqlite). Its schema is migrated to the current release on start-up.",
        "DATABASE_URL",
    )

    database_read_url: str = setting(
        "",
        "A streaming replica of database_url (postgresql://…) that the in-memory copies of "
        "chunk tables are read from (a small table's in each process, a big table's for the "
        "machine): the whole table when a copy is made and the rows written since as they "
        "change. Searches answered in SQL (a table too big for table_copy_mb, or while its "
        "copy is made) read database_url. A read the replica has not yet replayed (it lags "
        "the write "
        "this process was told of by more than half a second) or cannot answer goes to "
        "database_url; writes, the catalog and the access checks always do. Empty: "
        "database_url for everything.",
    )

    store: Annotated[str, backend("chunk_stores", "auto", "lancedb", "postgres")] = setting(
        "auto",
        "Chunk store backend: 'lancedb' (tables in the data dir), 'postgres' (pgvector and "
        "BM25 in the database_url database), or 'auto': postgres when database_url is a "
        "PostgreSQL URL, else lancedb.",
    )

    vector_index_min_rows: int = setting(
        50000,
        "Below this many chunks, vector and keyword search run on a copy of the table in "
        "memory (vectors: rows x dimension x 4 bytes, plus text and BM25 postings; with "
        "PostgreSQL each API process keeps its own, used only while the table's version is "
        "the one it was read at, so no write of any process is missed; 0 turns it off); "
        "from it on, LanceDB builds and uses an IVF index of 8-bit vectors, trained anew "
        "each time the table doubles ('citewell check' reports its measured recall), and its "
        "full-text index, PostgreSQL its HNSW index and BM25 postings.",
    )

    lance_cache_mb: int = setting(
        1024,
        "Memory (MB) LanceDB may keep in its index cache for each chunk table (LanceDB's own "
        "default is 6 GB), plus an eighth of it for file metadata. A million 384-dimensional "
        "chunks hold about 960 MB there once their indexes are warm; a smaller cache reads "
        "them from disk again and again (256 MB made searches 2-2.6x slower). Below "
        "vector_index_min_rows searches run in memory and LanceDB's cache only fills, with "
        "index segments that later writes replace, up to this bound: 256 is plenty there.",
        ge=16,
    )

    kb_snapshot_mb: int = setting(
        512,
        "Memory (MB) for in-memory copies of single knowledge bases of a chunk table at or "
        "above vector_index_min_rows (either store). A search in a KB holding fewer than "
        "vector_index_min_rows chunks runs on its copy once the KB has been searched twice: "
        "exact vector search, and BM25 with the KB's own statistics (as Open WebUI's "
        "per-collection BM25 has); at a million chunks, in one KB of 100, 11-13 ms a hybrid "
        "search instead of 53-61 through LanceDB's indexes, and in server mode 0.95x the "
        "embedded store's time where the whole table's copy took 1.4-1.8x. Each API process "
        "keeps its own copies. A copy holds vectors, text and BM25 postings (about 3.3 KB a "
        "chunk: 10,000 chunks take 33 MB). KBs searched most often keep their copies; writes "
        "to other KBs do not discard them. GET /api/v1/stats/store shows how many searches "
        "copies answer. "
        "0 turns copies off.",
        ge=0,
    )

    table_copy_mb: Annotated[int, Field(ge=0)] | Literal["auto"] = setting(
        "auto",
        "Memory (MB) for an in-memory copy of a whole chunk table at or above "
        "vector_index_min_rows (either store): the machine's one copy with table_copy_shared,"
        " else each API process's own. 'auto', the default: a fifth of the machine's memory "
        "(or of the container's limit), so 4.7 GB on a 24 GB machine (divided among the "
        "`workers` API processes when copies are not shared); 0 keeps big tables in LanceDB "
        "alone. A shared copy is counted at rows x (1.25 x dimension + 720) bytes: about 1.1 "
        "GB a million 384-dimensional chunks (int8 vectors, BM25 postings, id lookups and an "
        "IVF index of 4-bit codes made with faiss; text and float32 vectors stay on disk, "
        "read for results). A copy each process holds is counted at rows x (5 x dimension + "
        "1,536), about 3.3 GB a million; making either takes twice that for a minute or two, "
        "so it is put off while less memory is free. Searches then run on the copy while it "
        "holds the table's latest version: at a million chunks in one KB a hybrid search took"
        " 23-30 ms instead of 42-99 (docs/benchmarks/journal.md). Writes keep the copy: the "
        "rows of the files written since are read and searched beside it (within a second in "
        "every process); past 50,000 such rows it is made again once the table has had no "
        "write for 20 seconds (about a minute at a million chunks, at the lowest priority), "
        "and searches read the store meanwhile. 'citewell check' says when a big table does "
        "not fit; GET /api/v1/stats/store shows the copy and its budget.",
    )

    table_copy_shared: bool = setting(
        True,
        "Keep the in-memory copy of a big chunk table in files under data_dir/table_copies "
        "that every API process of the machine maps into memory: one copy per machine, not "
        "one per process, so `serve --workers 4` searches a table as big as one process "
        "would (the page cache holds it once, faiss's index of 4-bit codes included; each "
        "process adds a few MB of its own). Off: each process holds its own copy in "
        "table_copy_mb / workers. The data dir must be on a local disk.",
    )

    @field_validator("data_dir", mode="before")
    @classmethod
    def _default_data_dir(cls, value: Any) -> Any:
        return default_data_dir() if value in (None, "") else value
