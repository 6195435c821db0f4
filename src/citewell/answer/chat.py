"""The chat flow, in order: scope → retrieval queries → retrieval → token-budgeted context →
RAG template → injection → LLM (or an extractive answer) → citation check.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from citewell.answer.abstention import not_mentioned, unknown_names
from citewell.answer.agent import (
    StreamEvent,
    ToolLimits,
    ToolLoop,
    capabilities,
    tool_room,
    with_tools_note,
)
from citewell.answer.attribution import ABSTENTION, Attribution
from citewell.answer.checked import (
    abstains_early,
    attributed,
    quoted_attribution,
    unsupported_reason,
)
from citewell.answer.citations import cited_numbers, remove_invalid
from citewell.answer.context import CitedSource, context_string, context_tokens
from citewell.answer.exchange import (
    EXTRACTIVE_NOTE,
    ChatRequest,
    ChatResult,
    PreparedChat,
)
from citewell.answer.expand import Expansion
from citewell.answer.extractive import NO_MATCH, extractive_quotes, with_header
from citewell.answer.gather import RetrievalChoice, gather_sources
from citewell.answer.limits import MESSAGE_OVERHEAD, fit_messages
from citewell.answer.queries import as_asked, history_text, parse_queries, worth_generating
from citewell.answer.scope import chat_scope, fetch_url_pages, search_the_web
from citewell.answer.tasks import is_task, task_reply
from citewell.answer.templates import render_query_prompt, render_rag_template
from citewell.answer.tools import KnowledgeTools, SourceBook, ToolScope
from citewell.answer.urls import plain_refs, url_refs, without_refs
from citewell.auth.access import Access
from citewell.catalog.preset import ModelPreset
from citewell.catalog.presets import PresetStore
from citewell.config import Settings
from citewell.config.resolve import Choice, merged, resolve
from citewell.engine.scoped import Scoped
from citewell.errors import CitewellError, InvalidInput
from citewell.live_settings import LiveSettings
from citewell.llm.base import LLM, ChatMessage, Delta, Usage
from citewell.splitters.base import Measure
from citewell.tracing import span
from citewell.types import ChunkFilter

FOLLOW_UP_TURNS = 3  # user turns searched together when no LLM can write the query


class ChatPipeline:
    """A chat request to an answer with numbered sources: the KBs to search (the request's
    or a preset's), sources gathered as the caller, the prompt, the LLM (and its tools),
    and the citations kept."""

    def __init__(
        self,
        live: LiveSettings,
        measure: Measure,
        llm: LLM | None,
        presets: dict[str, ModelPreset],
        stored: PresetStore,
    ) -> None:
        """Built by the root; each request brings the caller's view (``Scoped``), through
        which every search, fetch and tool of the answer reaches the engine."""
        self.live = live
        self.llm = llm
        self.presets = presets  # from the model_presets setting: everyone's
        self.stored = stored  # made over the API: their owner's, and whom they share with
        self.measure = measure
        self.count = measure.size

    @property
    def settings(self) -> Settings:
        """Read per use: admins may change the template and prompts while it runs."""
        return self.live.settings

    # --- public ---------------------------------------------------------------------
    def presets_for(self, access: Access) -> dict[str, ModelPreset]:
        """The presets this caller may use, by model name: the configured ones, then those
        kept in the database that they own or were granted (their own first on a clash)."""
        found = dict(self.presets)
        usable = [s for s in self.stored.all() if access.can_use_preset(s.id)]
        usable.sort(key=lambda s: s.owner_id != access.user_id)  # stable: oldest next
        for item in usable:
            found.setdefault(item.preset.id, item.preset)
        return found

    def complete(self, view: Scoped, request: ChatRequest) -> ChatResult:
        """The whole answer to ``request``, from what ``view``'s caller may read."""
        prepared = self.prepare(view, request)
        if self.llm is None or abstains_early(self.settings, prepared):
            return self._without_model(prepared)
        if prepared.tools is not None:
            loop = self._loop(prepared)
            completion = loop.complete(prepared.messages)
        else:
            completion = self.llm.complete(
                prepared.upstream_model, prepared.messages, request.options
            )
        text, invalid = self._checked(completion.text, prepared)
        attribution = self.attribute(view, prepared, text)
        written = attribution.text if attribution else text
        abstained = self.abstention(attribution)
        return ChatResult(
            prepared,
            ABSTENTION if abstained else written,
            completion.finish_reason,
            completion.usage,
            tuple(invalid),
            extractive=False,
            tool_calls=completion.tool_calls,
            attribution=attribution,
            abstained=abstained,
            withheld=written if abstained else "",
        )

    def stream(
        self, view: Scoped, request: ChatRequest
    ) -> tuple[PreparedChat, Iterator[Delta | StreamEvent]]:
        """The prepared chat and its deltas; with builtin tools, status and source events
        between them (the sources of ``prepared`` grow as tools find passages)."""
        prepared = self.prepare(view, request)
        if self.llm is None or abstains_early(self.settings, prepared):
            result = self._without_model(prepared)
            return prepared, iter(
                [Delta(result.text), Delta(finish_reason="stop", usage=result.usage)]
            )
        if prepared.tools is not None:
            return prepared, self._loop(prepared).stream(prepared.messages)
        return prepared, self.llm.stream(
            prepared.upstream_model, prepared.messages, request.options
        )

    def _loop(self, prepared: PreparedChat) -> ToolLoop:
        assert self.llm is not None and prepared.tools is not None
        settings = self.settings
        room = min(settings.answering.tool_result_max_tokens, self._tool_room(prepared))
        limits = ToolLimits(
            settings.answering.tool_max_rounds, room, settings.answering.tool_max_seconds
        )
        loop = ToolLoop(
            self.llm,
            prepared.upstream_model,
            prepared.request.options,
            prepared.tools,
            limits,
            self.measure,
        )
        prepared.tool_run = loop.run
        prepared.trace["tool_calls"] = loop.run.calls
        return loop

    def _tool_room(self, prepared: PreparedChat) -> int:
        assert prepared.tools is not None
        reserve = self._reserve(prepared.request)
        return tool_room(self.settings, self.count, prepared.messages, prepared.tools, reserve)

    def attribute(
        self, view: Scoped, prepared: PreparedChat, text: str, skip: int = 0
    ) -> Attribution | None:
        """Each sentence of ``text`` checked against the sources (``citation_attribution``)."""
        return attributed(self.live.current, view.app.embedder, prepared, text, skip)

    def _without_model(self, prepared: PreparedChat) -> ChatResult:
        """The answer where the model is not asked: withheld, or extractive."""
        if abstains_early(self.settings, prepared):
            return self._not_mentioned(prepared)
        return self._extractive(prepared)

    def _not_mentioned(self, prepared: PreparedChat) -> ChatResult:
        prepared.abstained = "unknown_name"
        text = not_mentioned(prepared.unknown)
        usage = self.usage(prepared, text)
        extractive = self.llm is None
        return ChatResult(prepared, text, "stop", usage, (), extractive, abstained="unknown_name")

    def abstention(self, attribution: Attribution | None) -> str | None:
        return unsupported_reason(self.settings, attribution)

    def invalid_citations(self, text: str, prepared: PreparedChat) -> list[int]:
        """Numbers cited in a streamed answer that point at no source (flagged, not removed)."""
        valid = {s.number for s in prepared.sources}
        return sorted({n for n in cited_numbers(text) if n not in valid})

    # --- steps ----------------------------------------------------------------------
    def prepare(self, view: Scoped, request: ChatRequest) -> PreparedChat:
        """Scope, queries, sources and the prompt, as ``view``'s caller may have them."""
        started = time.perf_counter()
        if not any(m.role == "user" for m in request.messages):
            raise InvalidInput("messages needs at least one message with role 'user'.")
        preset = self.presets_for(request.access).get(request.model)
        warnings: list[str] = []
        request = self._fitted(request, warnings)  # bounded before any other step reads it
        if request.access is not view.access:
            request = replace(request, access=view.access)
        engine = view.app
        message = next(m.content for m in reversed(request.messages) if m.role == "user")
        if is_task(message):
            return self._task(request, preset, warnings)
        caps = capabilities(request.function_calling, preset, self.settings, self.llm)
        refs = url_refs(message) if caps.file_context else []
        pages = fetch_url_pages(engine, view, refs, warnings)
        question = without_refs(message) or " ".join(title for _, title in pages) or message
        question = self._clip_query(question)
        where = chat_scope(view, request, preset, warnings, [file_id for file_id, _ in pages])
        trace: dict[str, Any] = {}
        prepared = PreparedChat(
            request,
            self._upstream_model(request, preset),
            list(request.messages),
            [],
            [],
            warnings,
            trace,
            False,
        )
        scope = where  # what the builtin tools may reach, whatever is injected
        if (where is None or not caps.file_context) and not request.web_search:
            return self._equipped(prepared, view, scope, preset) if caps.tools else prepared
        if not caps.file_context:
            where = None  # 'no file context': the web search below, but none of the files
        budget = self._budget(request, preset)
        with span("generate queries") as current:
            prepared.queries = self._queries(request, prepared.upstream_model, question, trace)
            current.set_attribute("queries", len(prepared.queries))
        if request.web_search:
            where = [
                *(where or []),
                *search_the_web(engine, view, prepared.queries, warnings, trace),
            ]
        with span("gather sources") as current:
            prepared.sources = self._sources(
                view, prepared.queries, where or [], budget, request, preset, trace
            )
            current.set_attribute("sources", len(prepared.sources))
        if budget <= 0:
            warnings.append("The conversation fills the context window: no room for sources.")
        messages = [replace(m, content=plain_refs(m.content)) for m in request.messages]
        with span("pack context") as current:
            prepared.context = context_string(prepared.sources)
            prepared.context_tokens = context_tokens(prepared.sources, self.count)
            prepared.messages = self._inject(messages, prepared.context, question, preset)
            current.set_attribute("context_tokens", prepared.context_tokens)
        prepared.used_rag = True
        if self.settings.answering.abstain_on_unknown_names:
            prepared.unknown = unknown_names(question, prepared.sources)
        trace["timings_ms"] = {"prepare": round((time.perf_counter() - started) * 1000, 2)}
        return self._equipped(prepared, view, scope, preset) if caps.tools else prepared

    def _equipped(
        self,
        prepared: PreparedChat,
        view: Scoped,
        scope: list[ChunkFilter] | None,
        preset: ModelPreset | None,
    ) -> PreparedChat:
        """The builtin tools (see ``ToolScope.of``); passages they find are numbered after
        the injected sources."""
        request = prepared.request
        named = bool(request.knowledge or request.file_ids or (preset and preset.knowledge))
        web = bool(self.settings.web.web_search_engine)
        reach = ToolScope.of(scope, named)
        prepared.tools = KnowledgeTools(view, reach, SourceBook(prepared.sources), web)
        prepared.messages = with_tools_note(prepared.messages)
        return prepared

    def _task(
        self, request: ChatRequest, preset: ModelPreset | None, warnings: list[str]
    ) -> PreparedChat:
        """An Open WebUI background task goes to the model as it is: no fetches, no
        retrieval, no sources (its chat history may name URLs and topics all the same)."""
        upstream = self._upstream_model(request, preset)
        trace: dict[str, Any] = {"task": "background task: no retrieval"}
        messages = list(request.messages)
        return PreparedChat(request, upstream, messages, [], [], warnings, trace, False, True)

    def _fitted(self, request: ChatRequest, warnings: list[str]) -> ChatRequest:
        """The request with only the messages that fit the context window (oldest turns out
        first, with a warning); a last message that alone does not fit is refused."""
        limit = self.settings.llm.llm_context_window - self._reserve(request)
        messages, dropped = fit_messages(request.messages, limit, self.measure)
        if dropped:
            warnings.append(
                f"{dropped} earlier message(s) left out: the conversation is longer than the "
                f"context window ({self.settings.llm.llm_context_window} tokens, "
                "llm_context_window)."
            )
        return replace(request, messages=tuple(messages)) if dropped else request

    def _clip_query(self, text: str) -> str:
        """At most query_max_tokens, the newest words kept (as ``Engine.clip_query``)."""
        limit = self.settings.retrieval.query_max_tokens
        return self.measure.clip(text, limit, keep_end=True)

    def _upstream_model(self, request: ChatRequest, preset: ModelPreset | None) -> str:
        if preset is not None:
            return preset.base_model or self.settings.llm.llm_model or request.model
        return request.model

    def _reserve(self, request: ChatRequest) -> int:
        return int(request.options.get("max_tokens") or self.settings.llm.llm_reserved_tokens)

    def _budget(self, request: ChatRequest, preset: ModelPreset | None) -> int:
        """Tokens left for sources: the window minus the answer, the history and the template."""
        reserve = self._reserve(request)
        history = sum(self.count(m.content) + MESSAGE_OVERHEAD for m in request.messages)
        template = self.count(render_rag_template(self._template(preset), "", ""))
        return max(0, self.settings.llm.llm_context_window - reserve - history - template)

    def _template(self, preset: ModelPreset | None) -> str:
        return (
            preset.template if preset and preset.template else ""
        ) or self.settings.answering.rag_template

    def _queries(
        self, request: ChatRequest, model: str, question: str, trace: dict[str, Any]
    ) -> list[str]:
        asked = as_asked(request.messages)
        if self.llm is None and worth_generating(asked):
            # A follow-up ("What about in mice?") means little alone: with no LLM to rewrite
            # it, the recent user turns are searched together, the newest words kept.
            turns = [m.content for m in asked if m.role == "user"][-FOLLOW_UP_TURNS:]
            trace["query_generation"] = "no LLM: the last user turns searched together"
            return [self._clip_query("\n".join([*turns[:-1], question]))]
        if (
            self.llm is None
            or not self.settings.answering.enable_retrieval_query_generation
            or not worth_generating(asked)
        ):
            trace["query_generation"] = "skipped"
            return [question]
        history = self.measure.clip(
            history_text(asked), self.settings.llm.llm_context_window // 2, keep_end=True
        )
        prompt = render_query_prompt(
            self.settings.answering.query_generation_prompt_template, history
        )
        try:
            reply = self.llm.complete(
                model, [ChatMessage("user", prompt)], {"temperature": 0, "max_tokens": 200}
            )
            queries = parse_queries(reply.text)
        except CitewellError as exc:
            trace["query_generation"] = f"failed: {exc.code}"
            return [question]
        trace["query_generation"] = "ok" if queries else "unusable reply"
        return queries or [question]

    def _sources(
        self,
        view: Scoped,
        queries: list[str],
        where: list[ChunkFilter],
        budget: int,
        request: ChatRequest,
        preset: ModelPreset | None,
        trace: dict[str, Any],
    ) -> list[CitedSource]:
        # The request's choice, else its preset's, else the KBs' own, else the server's.
        # Mode and threshold are left to each KB's own where none is asked for: the search
        # of each scope resolves them with that scope's KBs (Engine.search_where).
        asked = merged(
            Choice(top_k=request.top_k or None, mode=request.mode),
            preset.choice() if preset else Choice(),
        )
        resolved = resolve(self.settings, asked, view.app.retrieval_defaults(where).choice())
        choice = RetrievalChoice(
            k=resolved.top_k,
            mode=asked.mode,
            threshold=asked.relevance_threshold,
            whole=resolved.full_context,
            bypass=self.settings.answering.bypass_embedding_and_retrieval,
            expansion=Expansion(
                self.settings.answering.small_to_big, self.settings.answering.small_to_big_chars
            ),
        )
        return gather_sources(view, queries, where, budget, choice, self.count, trace)

    def _inject(
        self,
        messages: Sequence[ChatMessage],
        context: str,
        question: str,
        preset: ModelPreset | None,
    ) -> list[ChatMessage]:
        prompt = render_rag_template(self._template(preset), context, question)
        out = list(messages)
        if self.settings.answering.rag_system_context:
            system = [m.content for m in out if m.role == "system"]
            rest = [m for m in out if m.role != "system"]
            parts = [p for p in (preset.system if preset else "", *system, prompt) if p]
            return [ChatMessage("system", "\n\n".join(parts)), *rest]
        last = max(i for i, m in enumerate(out) if m.role == "user")
        out[last] = ChatMessage("user", prompt)
        if preset and preset.system:
            out.insert(0, ChatMessage("system", preset.system))
        return out

    def _checked(self, text: str, prepared: PreparedChat) -> tuple[str, list[int]]:
        return remove_invalid(text, {s.number for s in prepared.sources})

    def _extractive(self, prepared: PreparedChat) -> ChatResult:
        question = next(m.content for m in reversed(prepared.request.messages) if m.role == "user")
        attribution = None
        if prepared.task:
            text = task_reply(question)
        elif not prepared.used_rag:
            text = (
                "No LLM is configured and no knowledge was selected, so there is nothing "
                "to answer from. Set llm_base_url, or pass knowledge_collections or "
                "file_ids."
            )
        else:
            passages = [with_header(s.text, s.lead) for s in prepared.sources]
            searched = " ".join(prepared.queries) or question
            stemmer = self.settings.retrieval.bm25_stemmer
            quotes = extractive_quotes(searched, passages, stemmer)
            quoted = " ".join(q.written() for q in quotes) if quotes else NO_MATCH
            text = f"{EXTRACTIVE_NOTE}\n\n{quoted}"
            if self.settings.answering.citation_attribution and quotes:
                attribution = quoted_attribution(text, quotes, prepared.sources, passages)
        usage = self.usage(prepared, text)
        return ChatResult(prepared, text, "stop", usage, (), True, attribution=attribution)

    def usage(self, prepared: PreparedChat, answer: str) -> Usage:
        """Tokens of the messages as prepared for the model, and of the answer (counted here
        when the model did not say)."""
        prompt = sum(
            self._tokens(m.content, prepared) + MESSAGE_OVERHEAD for m in prepared.messages
        )
        return Usage(prompt, self.count(answer))

    def _tokens(self, content: str, prepared: PreparedChat) -> int:
        """Tokens of a message; the sources in it were counted when they were packed."""
        if prepared.context and prepared.context in content:
            rest = content.replace(prepared.context, "", 1)
            return self.count(rest) + prepared.context_tokens
        return self.count(content)
