"""Embedders that call a server: any OpenAI-compatible /v1/embeddings, and Ollama's /api/embed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from citewell.embedders.base import Vectors, normalize
from citewell.errors import EmbeddingError
from citewell.http import post_with_retries
from citewell.tracing.client import traced
from citewell.types import EmbedKind

# Texts per request when the setting leaves it to the engine.
REMOTE_BATCH_SIZE = 32


class HttpEmbedder:
    """Shared plumbing: batching, retries with backoff, dimension discovery."""

    wire = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "",
        batch_size: int = REMOTE_BATCH_SIZE,
        timeout: float = 60.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.model = model
        self.model_id = f"{self.wire}:{model}"
        self.batch_size = batch_size or REMOTE_BATCH_SIZE
        self.retries = retries
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=timeout,
            transport=traced(transport, propagate_context=True),
        )
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> Vectors:
        del kind
        parts = [
            self._request(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = np.vstack(parts)
        self._dimension = int(vectors.shape[1])
        return vectors

    def _request(self, texts: list[str]) -> Vectors:
        path, body = self._payload(texts)
        base = self._client.base_url
        response = post_with_retries(
            self._client,
            path,
            body,
            self.retries,
            unreachable=lambda exc: EmbeddingError(
                f"Embedding server at {base} unreachable ({exc}); "
                "check embedding_base_url and that the server runs."
            ),
            refused=lambda r: EmbeddingError(
                f"Embedding server answered {r.status_code}: {r.text[:300]}; "
                "check embedding_model and embedding_api_key."
            ),
        )
        return normalize(self._parse(response.json(), len(texts)))

    def _payload(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        return "/embeddings", {"model": self.model, "input": texts}

    def _parse(self, body: dict[str, Any], expected: int) -> Vectors:
        try:
            rows = sorted(body["data"], key=lambda row: row["index"])
            vectors = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"Unexpected embeddings response: {str(body)[:300]}") from exc
        return _checked(vectors, expected)


class OpenAIEmbedder(HttpEmbedder):
    """POST {base_url}/embeddings, as OpenAI, vLLM, llama.cpp, LM Studio and TEI serve it."""

    wire = "openai"


class OllamaEmbedder(HttpEmbedder):
    """POST {base_url}/api/embed with a list input (Ollama ≥ 0.3)."""

    wire = "ollama"

    def _payload(self, texts: list[str]) -> tuple[str, dict[str, Any]]:
        return "/api/embed", {"model": self.model, "input": texts}

    def _parse(self, body: dict[str, Any], expected: int) -> Vectors:
        try:
            vectors = np.array(body["embeddings"], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"Unexpected Ollama response: {str(body)[:300]}") from exc
        return _checked(vectors, expected)


def _checked(vectors: Vectors, expected: int) -> Vectors:
    if vectors.ndim != 2 or vectors.shape[0] != expected:
        raise EmbeddingError(
            f"Embedding server returned {vectors.shape[0] if vectors.ndim else 0} vectors "
            f"for {expected} texts."
        )
    return vectors
