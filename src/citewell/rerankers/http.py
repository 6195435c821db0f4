"""An external rerank API: Cohere and Jina (``/v1/rerank``) or Hugging Face TEI (``/rerank``).

Request: {"model", "query", "documents", "top_n"} (Cohere/Jina) — TEI reads "texts" instead,
so both keys are sent. Responses: {"results": [{"index", "relevance_score"}]} or TEI's
[{"index", "score"}].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from citewell.errors import RerankError
from citewell.rerankers.base import apply_scores
from citewell.tracing.client import traced
from citewell.types import ScoredChunk


class HttpReranker:
    def __init__(
        self,
        url: str,
        model: str = "",
        api_key: str = "",
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url
        self.model = model
        self._client = httpx.Client(
            headers=headers, timeout=timeout, transport=traced(transport, propagate_context=True)
        )

    def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], top_k: int
    ) -> list[ScoredChunk]:
        if not candidates:
            return []
        texts = [c.chunk.text for c in candidates]
        body = {
            "model": self.model,
            "query": query,
            "documents": texts,
            "texts": texts,
            "top_n": len(texts),
        }
        try:
            response = self._client.post(self.url, json=body)
            response.raise_for_status()
            scores = parse_scores(response.json(), len(texts))
        except httpx.HTTPError as exc:
            raise RerankError(
                f"Rerank API at {self.url} failed ({exc}); check reranker_url."
            ) from exc
        return apply_scores(candidates, scores, top_k)


def parse_scores(body: Any, count: int) -> list[float]:
    rows = body.get("results", body.get("data")) if isinstance(body, dict) else body
    if not isinstance(rows, list):
        raise RerankError(f"Unexpected rerank response: {str(body)[:300]}")
    scores = [0.0] * count
    for row in rows:
        try:
            scores[int(row["index"])] = float(row.get("relevance_score", row.get("score")))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise RerankError(f"Unexpected rerank result row: {str(row)[:200]}") from exc
    return scores
