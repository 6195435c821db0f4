"""What every LLM reached over HTTP shares: one client, POST with retries, streamed lines,
a model listing, and errors that say which server failed and what to check."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import httpx

from citewell.errors import LLMError, ModelNotFound
from citewell.http import post_with_retries, stream_lines
from citewell.tracing.client import traced


class RemoteLLM(ABC):
    chat_path = "/chat/completions"
    models_path = "/models"
    unreachable_hint = "check llm_base_url and that the server runs."
    missing_model_hint = "The LLM server does not know that model"

    def __init__(
        self,
        base_url: str,
        api_key: str = "",
        timeout: float = 120.0,
        retries: int = 2,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=10.0),
            transport=traced(transport, propagate_context=True),
        )

    @abstractmethod
    def model_names(self, listing: Any) -> list[str]:
        """The model names in the server's answer to ``models_path``."""

    def models(self) -> list[str]:
        try:
            response = self._client.get(self.models_path)
            response.raise_for_status()
            return self.model_names(response.json())
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return []

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        return post_with_retries(
            self._client,
            self.chat_path,
            body,
            self.retries,
            unreachable=lambda exc: LLMError(
                f"The LLM at {self.base_url} is unreachable ({exc}); {self.unreachable_hint}"
            ),
            refused=self._error,
        )

    def _lines(self, body: dict[str, Any]) -> Iterator[str]:
        return stream_lines(self._client, self.chat_path, body, self._error, self._broken)

    def _broken(self, exc: httpx.HTTPError) -> Exception:
        return LLMError(f"The LLM at {self.base_url} failed mid-stream ({exc}).")

    def _error(self, response: httpx.Response) -> Exception:
        detail = response.text[:300]
        if response.status_code == 404:
            return ModelNotFound(f"{self.missing_model_hint} ({detail}).")
        return LLMError(f"The LLM at {self.base_url} answered {response.status_code}: {detail}")
