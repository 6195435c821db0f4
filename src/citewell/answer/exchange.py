"""What goes into the chat pipeline and what comes out: a request, the prepared prompt with
its sources, and the result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from citewell.answer.agent import ToolRun
from citewell.answer.attribution import Attribution
from citewell.answer.context import CitedSource
from citewell.answer.tools import KnowledgeTools
from citewell.auth.access import Access
from citewell.llm.base import ChatMessage, Usage
from citewell.types import SearchMode

EXTRACTIVE_MODEL = "citewell-extractive"  # the model name served when no LLM is configured
EXTRACTIVE_NOTE = "Extractive answer (no LLM configured): best-matching sentences, quoted."


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: tuple[ChatMessage, ...]
    knowledge: tuple[str, ...] = ()  # knowledge base ids or names
    file_ids: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    stream: bool = False
    trace: bool = False
    web_search: bool = False  # search the web with the retrieval queries, cite the pages
    function_calling: str = ""  # "native" | "default"; "": the preset's, else the setting
    mode: SearchMode | None = None  # retrieval for this request (None: the preset's/setting)
    top_k: int | None = None
    access: Access = field(kw_only=True)  # what the caller may read: applied in every search


@dataclass
class PreparedChat:
    request: ChatRequest
    upstream_model: str
    messages: list[ChatMessage]
    sources: list[CitedSource]
    queries: list[str]
    warnings: list[str]
    trace: dict[str, Any]
    used_rag: bool
    task: bool = False  # an Open WebUI background task: no retrieval, no sources
    tools: KnowledgeTools | None = None  # builtin tools the model may call (native mode)
    tool_run: ToolRun | None = None  # what the tool loop did, once it ran
    # The sources as one string in the prompt, and its tokens (counted once, in pack).
    context: str = ""
    context_tokens: int = 0
    unknown: list[str] = field(default_factory=list)  # what the question names, no source has
    abstained: str = ""  # why it is answered without the model (a stable code), if it is


@dataclass(frozen=True)
class ChatResult:
    prepared: PreparedChat
    text: str
    finish_reason: str
    usage: Usage
    invalid_citations: tuple[int, ...]
    extractive: bool
    tool_calls: tuple[dict[str, Any], ...] = ()  # for the client to run
    attribution: Attribution | None = None  # each sentence's supporting source, if checked
    abstained: str | None = None  # why the answer was withheld (a stable code), if it was
    withheld: str = ""  # the model's answer, when it was withheld
