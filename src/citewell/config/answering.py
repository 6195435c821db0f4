"""The ``answering`` section: how answers are made: prompts, citations, presets, tools, budgets."""

from __future__ import annotations

from typing import Literal

from citewell.config.fields import Scopes, Section, setting


class AnsweringSection(Section):
    """How answers are made: the prompt, the context, tools and model presets."""

    rag_template: str = setting(
        "",
        "RAG prompt template; [context]/{{CONTEXT}} and [query]/{{QUERY}} are replaced. "
        "Empty: the built-in template.",
        "RAG_TEMPLATE",
        scopes=Scopes(runtime=True, request=True),
    )

    rag_system_context: bool = setting(
        True,
        "Put the retrieved context in the system message (stable prefix, prompt-cache "
        "friendly); false puts it in the last user message as Open WebUI does by default.",
        "RAG_SYSTEM_CONTEXT",
        scopes=Scopes(runtime=True),
    )

    rag_full_context: bool = setting(
        False,
        "Give the LLM whole documents instead of retrieved chunks, while they fit the "
        "token budget (falls back to retrieval when they would not).",
        "RAG_FULL_CONTEXT",
        scopes=Scopes(runtime=True, kb=True, request=True),
    )

    small_to_big: Literal["off", "window", "section"] = setting(
        "off",
        "Small-to-big: search small chunks, give the LLM the text around each. 'window': "
        "small_to_big_chars more on each side; 'section': the same, but never beyond the "
        "chunk's section (its heading). Sources still cite the retrieved span; a window that "
        "does not fit the budget, or overlaps one already given, is given as the chunk alone.",
        scopes=Scopes(runtime=True),
    )

    small_to_big_chars: int = setting(
        800,
        "Characters added on each side of a chunk by small_to_big.",
        ge=0,
        scopes=Scopes(runtime=True),
    )

    bypass_embedding_and_retrieval: bool = setting(
        False,
        "Store extracted text without chunking or embedding, and give chats whole "
        "documents (within the token budget).",
        "BYPASS_EMBEDDING_AND_RETRIEVAL",
    )

    citation_attribution: bool = setting(
        True,
        "Check every answer sentence against the sources after the model wrote it: keep a "
        "citation the cited source supports, replace one it does not, add one where the "
        "model cited nothing, and flag sentences no source supports (the response's "
        "'attribution'). Off: the model's [n] are kept as written (those pointing at no "
        "source are still removed).",
        scopes=Scopes(runtime=True),
    )

    citation_min_support: float = setting(
        0.6,
        "Share of a sentence's words (weighted: rare ones count more) that one sentence of a "
        "source, or two in a row, must hold to support it.",
        scopes=Scopes(runtime=True),
        ge=0.0,
        le=1.0,
    )

    citation_min_similarity: float = setting(
        0.7,
        "Where the wording falls short: the embedding model's cosine similarity between the "
        "sentence and a source's span that also counts as support (1.1: wording alone).",
        scopes=Scopes(runtime=True),
        ge=0.0,
        le=1.1,
    )

    citation_checker: Literal["embedding", "reranker"] = setting(
        "embedding",
        "What compares a sentence with its sources' spans where the wording falls short: "
        "'embedding' (cosine) or 'reranker' (the configured reranker's relevance, 0..1; a "
        "cross-encoder judges a sentence against a span more finely, at more cost). Either "
        "counts as support from citation_min_similarity. 'reranker' with no reranker "
        "configured uses the embedding model.",
        scopes=Scopes(runtime=True),
    )

    abstain_below: float = setting(
        0.5,
        "Abstain when fewer than this share of an LLM answer's sentences is supported by its "
        "sources: the answer then says plainly that the sources do not answer the question "
        "(reason 'unsupported_answer'; the model's text is kept in the response). 0: never. "
        "Needs citation_attribution.",
        scopes=Scopes(runtime=True),
        ge=0.0,
        le=1.0,
    )

    abstain_on_unknown_names: bool = setting(
        True,
        "Answer that the sources do not answer, without asking the LLM, when the question "
        "names something (a capitalised name, a code such as PX-9492), or counts something "
        "('how many forklifts'), that no retrieved source mentions (reason 'unknown_name'). "
        "Not with builtin tools, which may search further.",
        scopes=Scopes(runtime=True),
    )

    citation_mark_unsupported: bool = setting(
        False,
        "Write ' [unsupported]' after answer sentences no source supports (they are flagged "
        "in the response's 'attribution' either way).",
        scopes=Scopes(runtime=True),
    )

    enable_retrieval_query_generation: bool = setting(
        True,
        "Let the LLM write 1-3 search queries from the recent conversation (skipped for "
        "a single-turn question, where the question itself is the query).",
        "ENABLE_RETRIEVAL_QUERY_GENERATION",
        scopes=Scopes(runtime=True),
    )

    query_generation_prompt_template: str = setting(
        "",
        "Prompt for query generation; {{MESSAGES}} is replaced by the recent history. "
        "Empty: the built-in prompt.",
        "QUERY_GENERATION_PROMPT_TEMPLATE",
        scopes=Scopes(runtime=True),
    )

    function_calling: Literal["default", "native"] = setting(
        "default",
        "'native': offer the LLM the builtin knowledge tools (query_knowledge_files, "
        "view_knowledge_file, ...) so it can search and read on its own, beside the injected "
        "sources. 'default': no tools (for models that cannot call them). A preset or a "
        "request's function_calling (or Open WebUI's params.function_calling) overrides it.",
        scopes=Scopes(request=True),
    )

    tool_max_rounds: int = setting(
        5, "Model turns per answer that may call builtin tools; then it must answer.", ge=0
    )

    tool_result_max_tokens: int = setting(
        6000,
        "Tokens of builtin tool results per answer, all calls together (results past it are "
        "cut, and the model is told to answer).",
        ge=0,
    )

    tool_web_domains: str = setting(
        "",
        "Comma-separated domains (and their subdomains) that the model's web tools, fetch_url "
        "and search_web's result pages, may reach, e.g. 'wikipedia.org,docs.python.org'. "
        "Empty: any public address. A document in a KB can ask the model to fetch a URL "
        "with the reader's data in it; set this wherever KBs hold text from others.",
    )

    tool_max_seconds: float = setting(
        120.0, "Seconds after which an answer's builtin tools are no longer offered.", gt=0
    )

    model_presets: str = setting(
        "",
        'JSON list of model presets: [{"id": "hr-assistant", "knowledge": ["handbook"], '
        '"base_model": "llama3", "template": "...", "top_k": 8, '
        '"system": "...", "file_context": true, "builtin_tools": true, '
        '"function_calling": "native"}]. Each appears at /v1/models and answers from its KBs.',
    )
