"""A local GGUF model run in process by llama-cpp-python (the optional `local-llm` extra).

For a server with no other service: `llm_engine = "llamacpp"` and `llm_model_path` pointing at
a .gguf file. Small CPU models answer slowly and poorly; this is for offline use and tests,
not a replacement for a real LLM server.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from citewell.errors import ConfigError, LLMError, MissingDependency
from citewell.llm.base import CHAT_OPTIONS, ChatMessage, Completion, Delta, Usage


class LlamaCppLLM:
    def __init__(
        self,
        model_path: Path,
        context_window: int = 8192,
        threads: int = 0,
        answer_tokens: int = 1024,
    ) -> None:
        """``answer_tokens``: the longest answer when a request gives no max_tokens (the room
        the context packing leaves it, llm_reserved_tokens)."""
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise MissingDependency(
                "llm_engine=llamacpp needs llama-cpp-python: pip install 'citewell[local-llm]' "
                "(it compiles llama.cpp; allow 5-15 minutes)."
            ) from exc
        if not model_path.is_file():
            raise ConfigError(f"llm_model_path {model_path} is not a GGUF file.")
        self.name = model_path.stem
        self.answer_tokens = answer_tokens
        self._llama = Llama(
            model_path=str(model_path),
            n_ctx=context_window,
            n_threads=threads or None,
            verbose=False,
        )
        self._lock = threading.Lock()  # one generation at a time: the model is not reentrant

    def _kwargs(self, messages: Sequence[ChatMessage], options: dict[str, Any]) -> dict[str, Any]:
        kwargs = {
            k: v for k, v in options.items() if k in CHAT_OPTIONS and v is not None and k != "user"
        }
        # Chat templates of small models concatenate content: None (an assistant's tool
        # calls) breaks them, so it is sent as "".
        kwargs["messages"] = [{**m.wire(), "content": m.content or ""} for m in messages]
        # Without a bound llama.cpp writes until the window is full: a small model that
        # repeats itself did so for 90 s, holding the model (and every other caller) meanwhile.
        kwargs.setdefault("max_tokens", self.answer_tokens)
        return kwargs

    def complete(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Completion:
        del model  # one model per process
        with self._lock:
            try:
                # llama-cpp's return type is a union of response and stream: read it as data.
                out: Any = self._llama.create_chat_completion(**self._kwargs(messages, options))
            except (ValueError, TypeError) as exc:  # the window overflows; a template fails
                raise LLMError(f"The local model could not answer: {exc}") from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            choice["message"].get("content") or "",
            choice.get("finish_reason") or "stop",
            Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
            tuple(choice["message"].get("tool_calls") or ()),
        )

    def stream(
        self, model: str, messages: Sequence[ChatMessage], options: dict[str, Any]
    ) -> Iterator[Delta]:
        del model
        with self._lock:
            try:
                chunks: Any = self._llama.create_chat_completion(
                    stream=True, **self._kwargs(messages, options)
                )
                for chunk in chunks:
                    choice = chunk["choices"][0]
                    delta = choice.get("delta") or {}
                    yield Delta(
                        delta.get("content") or "",
                        choice.get("finish_reason"),
                        tool_calls=tuple(delta.get("tool_calls") or ()),
                    )
            except (ValueError, TypeError) as exc:
                raise LLMError(f"The local model could not answer: {exc}") from exc

    def models(self) -> list[str]:
        return [self.name]
