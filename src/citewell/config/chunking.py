"""The ``chunking`` section: how documents are cut into chunks."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import field_validator, model_validator

from citewell.config.fields import Scopes, Section, backend, setting


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
