"""The ``llm`` section: the LLM that writes answers, contexts, summaries and queries."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from citewell.config.fields import Scopes, Section, backend, setting


class LLMSection(Section):
    """The LLM that writes answers (and contexts, summaries, queries)."""

    llm_engine: Annotated[str, backend("llm", "openai", "ollama", "llamacpp")] = setting(
        "openai",
        "'openai': any OpenAI-compatible server at llm_base_url; 'ollama': Ollama's native "
        "API at llm_base_url (its root), sending num_ctx=llm_context_window so long prompts "
        "are not cut at Ollama's default context; 'llamacpp': a local GGUF model "
        "(llm_model_path) run in process (pip install 'citewell[local-llm]').",
    )

    llm_model_path: Path | None = setting(None, "For llm_engine=llamacpp: the .gguf model file.")

    llm_base_url: str = setting(
        "",
        "OpenAI-compatible chat endpoint base, e.g. http://127.0.0.1:11434/v1 (Ollama), "
        "https://api.openai.com/v1. Empty: answers are extractive.",
        "OPENAI_API_BASE_URL",
    )

    llm_api_key: str = setting("", "Bearer token for the LLM endpoint.", "OPENAI_API_KEY")

    llm_model: str = setting(
        "",
        "Model used when a request names none of the presets and the LLM's own list is "
        "unavailable; also the default base model of presets.",
        scopes=Scopes(request=True),
    )

    llm_timeout: float = setting(120.0, "Seconds before an LLM call fails.")

    llm_context_window: int = setting(
        8192, "Context window (tokens) of the LLM; context is packed to fit it."
    )

    llm_reserved_tokens: int = setting(
        1024,
        "Tokens kept free for the answer when max_tokens is not given; a local model "
        "(llm_engine=llamacpp) also ends its answer there.",
    )
