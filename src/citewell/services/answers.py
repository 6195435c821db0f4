"""Answers as one caller may have them: the models they may name (their model presets, then
the LLM's own), a model check that answers 404 for the rest, and the answer itself, written
or streamed, from the knowledge the caller may read (the chat pipeline searches through the
caller's view)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace

from citewell.answer.agent import StreamEvent
from citewell.answer.attribution import Attribution
from citewell.answer.chat import ChatPipeline
from citewell.answer.exchange import EXTRACTIVE_MODEL, ChatRequest, ChatResult, PreparedChat
from citewell.engine.scoped import Scoped
from citewell.errors import ModelNotFound
from citewell.llm.base import Delta

MODELS_TTL = 60.0  # seconds the LLM server's list of models is kept


class ModelList:
    """The LLM server's models (with llm_model first), asked at most every ``ttl`` seconds:
    shared by every caller, so a client listing models often does not reach the LLM."""

    def __init__(self, chat: ChatPipeline, ttl: float = MODELS_TTL) -> None:
        self.chat, self.ttl = chat, ttl
        self._lock = threading.Lock()
        self._cached: tuple[float, list[str]] | None = None

    def names(self) -> list[str]:
        if self.chat.llm is None:
            return [EXTRACTIVE_MODEL]
        with self._lock:
            cached = self._cached
        if cached is None or time.monotonic() - cached[0] > self.ttl:
            configured = self.chat.settings.llm.llm_model
            names = [*([configured] if configured else []), *self.chat.llm.models()]
            cached = (time.monotonic(), list(dict.fromkeys(names)))
            with self._lock:
                self._cached = cached
        return cached[1]


def missing_model_message(model: str, known: list[str], extractive: bool) -> str:
    shown = ", ".join(known[:10]) + (", …" if len(known) > 10 else "")
    hint = " (no LLM is configured: set llm_base_url for written answers)" if extractive else ""
    return f"Model {model!r} not found; use one of: {shown}{hint}. GET /v1/models lists them."


class AnswerService:
    """Answers through the caller's view: the pipeline searches, fetches and runs its tools
    as this caller, so an answer cites nothing they may not read."""

    def __init__(self, chat: ChatPipeline, models: ModelList, view: Scoped) -> None:
        self.chat, self.model_list, self.view = chat, models, view
        self.access = view.access

    @property
    def extractive(self) -> bool:
        """No LLM: answers are the retrieved passages themselves."""
        return self.chat.llm is None

    def models(self) -> list[str]:
        """The presets this caller may use, then the LLM's models (or citewell-extractive)."""
        presets = self.chat.presets_for(self.access)
        return list(dict.fromkeys([*presets, *self.model_list.names()]))

    def check_model(self, model: str) -> None:
        """404 for a model the caller's list lacks: without an LLM that is anything but the
        presets and ``citewell-extractive``; with one, anything its server does not list (a
        server that lists nothing is taken at its word for any name)."""
        known = self.models()
        if known and model not in known:
            raise ModelNotFound(missing_model_message(model, known, self.extractive))

    def complete(self, request: ChatRequest) -> ChatResult:
        """The whole answer, from what this caller may read."""
        return self.chat.complete(self.view, replace(request, access=self.access))

    def attribute(self, prepared: PreparedChat, text: str) -> Attribution | None:
        """A streamed answer's sentences checked against its sources, once it is whole."""
        return self.chat.attribute(self.view, prepared, text)

    def stream(self, request: ChatRequest) -> tuple[PreparedChat, Iterator[Delta | StreamEvent]]:
        """The prepared chat (its sources) and the answer's deltas as they come."""
        return self.chat.stream(self.view, replace(request, access=self.access))
