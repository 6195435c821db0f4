"""Settings of where data lives (storage) and of the queue of ingestion jobs."""

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
        "above vector_index_min_rows (LanceDB only). A search in a KB holding fewer than "
        "vector_index_min_rows chunks runs on its copy: exact vector search, and BM25 with "
        "the KB's own statistics (as Open WebUI's per-collection BM25 has), instead of "
        "LanceDB's indexes; at a million chunks, in one KB of 100, 11-13 ms a hybrid "
        "search instead of 53-61. Each API process keeps its own copies. A copy holds "
        "vectors, text and BM25 postings (about 3.2 KB a chunk: 7,863 SciFact chunks take 27 "
        "MB). KBs searched most often keep their copies; writes to other KBs do not "
        "discard them. GET /api/v1/stats/store shows how many searches copies answer. "
        "0 turns copies off.",
        ge=0,
    )

    table_copy_mb: Annotated[int, Field(ge=0)] | Literal["auto"] = setting(
        "auto",
        "Memory (MB) for an in-memory copy of a whole chunk table at or above "
        "vector_index_min_rows, in each API process (LanceDB only). 'auto', the default: a "
        "fifth of the machine's memory (or of the container's limit) shared by the `workers` "
        "API processes, so 4.7 GB on a 24 GB machine with one; 0 keeps big tables in LanceDB "
        "alone. A table is copied when rows x (5 x dimension + 1,536) bytes fits: about 3.3 GB "
        "a million 384-dimensional chunks (text, BM25 postings, vectors and an IVF index of "
        "4-bit codes made with faiss; twice that for a minute while it is made, so it is put "
        "off while less memory is free). Searches then run on the copy while it holds the "
        "table's latest version: at a million chunks in one KB a hybrid search took 23-30 ms "
        "instead of 42-99 (docs/benchmarks/journal.md). After a write searches read LanceDB "
        "until the table has had no write for 20 seconds and a new copy is made (about a "
        "minute at a million chunks, at the lowest priority). 'citewell check' says when a "
        "big table does not fit; GET /api/v1/stats/store shows the copy and its budget.",
    )

    @field_validator("data_dir", mode="before")
    @classmethod
    def _default_data_dir(cls, value: Any) -> Any:
        return default_data_dir() if value in (None, "") else value


class FileStoreSection(Section):
    """Where uploaded originals, extracted texts, page maps and staged uploads are kept."""

    file_store: Annotated[str, backend("file_stores", "local", "s3")] = setting(
        "local",
        "Where stored files live: 'local', the data dir's files/ directory (several hosts "
        "then need it on a shared mount), or 's3', an S3-compatible bucket (AWS S3, MinIO, "
        "R2, …; file_store_bucket and the settings below), which API processes and workers "
        "on any hosts share without a mount. 'citewell files copy' moves stored files from "
        "one to the other.",
        "STORAGE_PROVIDER",
    )

    file_store_bucket: str = setting(
        "", "Bucket of stored files when file_store = s3.", "S3_BUCKET_NAME"
    )

    file_store_prefix: str = setting(
        "",
        "Key prefix of stored files in the bucket (e.g. 'citewell/prod'), so one bucket can "
        "serve several deployments.",
        "S3_KEY_PREFIX",
    )

    file_store_endpoint: str = setting(
        "",
        "URL of the S3-compatible service (e.g. http://minio:9000); empty for AWS S3.",
        "S3_ENDPOINT_URL",
    )

    file_store_region: str = setting(
        "", "Region of the bucket; empty: boto3's default.", "S3_REGION_NAME"
    )

    file_store_access_key_id: str = setting(
        "",
        "Access key id for the bucket. Empty: boto3's own chain (AWS_ACCESS_KEY_ID, "
        "~/.aws, an instance or pod role).",
        "S3_ACCESS_KEY_ID",
    )

    file_store_secret_access_key: str = setting(
        "", "Secret of file_store_access_key_id.", "S3_SECRET_ACCESS_KEY"
    )

    file_store_addressing_style: Literal["auto", "path", "virtual"] = setting(
        "auto",
        "How bucket URLs are formed: 'path' (endpoint/bucket/key, what MinIO and most "
        "self-hosted services want), 'virtual' (bucket.endpoint/key), 'auto': path with a "
        "file_store_endpoint, else boto3's choice.",
        "S3_ADDRESSING_STYLE",
    )


class JobSection(Section):
    """The queue of ingestion jobs and its workers."""

    job_batch_files: int = setting(
        64,
        "Queued files the worker takes at once; their chunks are embedded together, so many "
        "small files still make full embedding batches.",
    )

    job_slice_files: int = setting(
        8,
        "Of the files taken at once, how many are ingested under one hold of the index's "
        "lock. Between slices a user's upload that waits goes first, so it waits for one "
        "slice rather than the whole batch; larger slices embed a little faster.",
        ge=1,
    )

    job_max_attempts: int = setting(
        3, "Attempts a job gets when it fails for a reason that may pass (a service down)."
    )

    job_retry_seconds: float = setting(
        2.0, "Wait before the first retry of a job; doubled for each further attempt."
    )

    job_lease_seconds: float = setting(
        30.0,
        "A running job belongs to its worker for this long; the worker renews it every third "
        "of it while alive. A killed worker's jobs are queued again for any worker once it "
        "passes.",
        gt=1,
    )

    max_batch_files: int = setting(1000, "Most files one batch upload request may carry.")

    serve_job_worker: bool = setting(
        True,
        "Run queued ingest jobs inside `citewell serve`. Turn off when `citewell worker` "
        "processes run them instead.",
    )
