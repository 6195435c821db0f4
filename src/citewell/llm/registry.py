"""Where the LLM backend is chosen: ``llm_engine`` → a factory. None: no LLM configured, so
answers are extractive. Plug-ins: the entry point group ``citewell.llm``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import urlsplit

from citewell.config import LLMSection, Settings
from citewell.errors import ConfigError
from citewell.llm.base import LLM
from citewell.llm.openai_compat import OpenAICompatibleLLM
from citewell.plugins import Registry

log = logging.getLogger(__name__)
OLLAMA_PORT = 11434


def _openai(section: LLMSection) -> LLM | None:
    if not section.llm_base_url:
        return None
    if urlsplit(section.llm_base_url).port == OLLAMA_PORT:
        log.warning(
            "llm_base_url looks like Ollama's OpenAI-compatible endpoint, which cannot set the "
            "context length: Ollama may cut prompts longer than its default num_ctx (often "
            "2048 tokens), dropping retrieved passages. Set llm_engine=ollama (and llm_base_url "
            "to the server's root) so Citewell sends num_ctx=llm_context_window (%d).",
            section.llm_context_window,
        )
    return OpenAICompatibleLLM(section.llm_base_url, section.llm_api_key, section.llm_timeout)


def _llamacpp(section: LLMSection) -> LLM | None:
    from citewell.llm.llamacpp import LlamaCppLLM  # needs the local-llm extra

    if section.llm_model_path is None:
        raise ConfigError("llm_engine=llamacpp needs llm_model_path (a .gguf file).")
    return LlamaCppLLM(
        section.llm_model_path,
        section.llm_context_window,
        answer_tokens=section.llm_reserved_tokens,
    )


def _ollama(section: LLMSection) -> LLM | None:
    from citewell.llm.ollama import OllamaLLM

    if not section.llm_base_url:
        raise ConfigError("llm_engine=ollama needs llm_base_url, e.g. http://127.0.0.1:11434.")
    return OllamaLLM(section.llm_base_url, section.llm_context_window, section.llm_timeout)


LLMS: Registry[Callable[[LLMSection], LLM | None]] = Registry("llm")
LLM_ENGINES = LLMS  # its name before issue 66, kept for plug-ins
LLMS.add("openai", _openai)
LLMS.add("ollama", _ollama)
LLMS.add("llamacpp", _llamacpp)


def build_llm(settings: Settings) -> LLM | None:
    return LLMS.get(settings.llm.llm_engine)(settings.llm)


def llm_configured(settings: Settings) -> bool:
    """Whether these settings name an LLM (without building it: a local one loads a model)."""
    return settings.llm.llm_engine != "openai" or bool(settings.llm.llm_base_url)
