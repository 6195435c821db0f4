"""Where the LLM backend is chosen: ``llm_engine`` → a factory. None: no LLM configured, so
answers are extractive."""

from __future__ import annotations

from collections.abc import Callable

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.llm.base import LLM
from citewell.llm.openai_compat import OpenAICompatibleLLM


def _openai(settings: Settings) -> LLM | None:
    if not settings.llm_base_url:
        return None
    return OpenAICompatibleLLM(settings.llm_base_url, settings.llm_api_key, settings.llm_timeout)


def _llamacpp(settings: Settings) -> LLM | None:
    from citewell.llm.llamacpp import LlamaCppLLM  # needs the local-llm extra

    if settings.llm_model_path is None:
        raise ConfigError("llm_engine=llamacpp needs llm_model_path (a .gguf file).")
    return LlamaCppLLM(settings.llm_model_path, settings.llm_context_window)


LLM_ENGINES: dict[str, Callable[[Settings], LLM | None]] = {
    "openai": _openai,
    "llamacpp": _llamacpp,
}


def build_llm(settings: Settings) -> LLM | None:
    return LLM_ENGINES[settings.llm_engine](settings)
