"""Settings that admins change while the server runs (retrieval, reranking, chunking, the
prompts), in three modules: ``layers`` (the start-up settings, the run-time changes kept in
the database, and the settings in force), ``built`` (what is built from them), ``names``
(which settings may change where, and Open WebUI's names for them)."""

from citewell.live_settings.built import (
    default_mode,
    enrich_config,
    kb_ranking,
    needs_llm,
    retrieval_settings,
)
from citewell.live_settings.layers import LiveSettings, SettingsInForce
from citewell.live_settings.names import (
    KB_CHUNKING,
    MASK,
    OPEN_WEBUI_NAMES,
    READ_ONLY_KEYS,
    RUNTIME_SETTINGS,
    check_kb_chunking,
    runtime_changes,
)

__all__ = [
    "KB_CHUNKING",
    "MASK",
    "OPEN_WEBUI_NAMES",
    "READ_ONLY_KEYS",
    "RUNTIME_SETTINGS",
    "LiveSettings",
    "SettingsInForce",
    "check_kb_chunking",
    "default_mode",
    "enrich_config",
    "kb_ranking",
    "needs_llm",
    "retrieval_settings",
    "runtime_changes",
]
