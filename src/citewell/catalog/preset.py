"""Model presets: a model name that binds knowledge bases, a base LLM and a template."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from citewell.config.resolve import Choice
from citewell.errors import ConfigError
from citewell.types import SearchMode


@dataclass(frozen=True)
class ModelPreset:
    id: str
    knowledge: tuple[str, ...] = ()
    base_model: str = ""
    template: str = ""
    system: str = ""
    top_k: int | None = None
    name: str = ""
    # Seed 000's two capabilities: retrieval injected up front, and builtin tools offered
    # (in native function calling). Both on by default, as there.
    file_context: bool = True
    builtin_tools: bool = True
    function_calling: str = ""  # "native" | "default"; "": the function_calling setting
    # Its own retrieval (unset: the settings'): "hr-assistant" hybrid k=5, "legal" whole files.
    mode: str = ""  # hybrid | vector | bm25
    relevance_threshold: float | None = None
    full_context: bool | None = None

    def choice(self) -> Choice:
        """What this preset sets of a request's retrieval (config.resolve)."""
        return Choice(
            top_k=self.top_k or None,
            mode=SearchMode(self.mode) if self.mode else None,
            relevance_threshold=self.relevance_threshold,
            full_context=self.full_context,
        )


def parse_presets(raw: str) -> dict[str, ModelPreset]:
    if not raw.strip():
        return {}
    try:
        presets = [preset_from_dict(item) for item in json.loads(raw)]
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"model_presets is not a JSON list of presets with an 'id': {exc}"
        ) from exc
    return {p.id: p for p in presets}


def preset_from_dict(item: dict[str, Any]) -> ModelPreset:
    """A preset from its JSON fields (the setting's, or the database's); ValueError or
    KeyError when one is missing or wrong."""
    return ModelPreset(
        id=str(item["id"]),
        knowledge=tuple(item.get("knowledge", ())),
        base_model=item.get("base_model", ""),
        template=item.get("template", ""),
        system=item.get("system", ""),
        top_k=item.get("top_k"),
        name=item.get("name", ""),
        file_context=bool(item.get("file_context", True)),
        builtin_tools=bool(item.get("builtin_tools", True)),
        function_calling=_function_calling(item.get("function_calling", "")),
        mode=_mode(item.get("mode", "")),
        relevance_threshold=item.get("relevance_threshold"),
        full_context=item.get("full_context"),
    )


def _function_calling(value: object) -> str:
    if value not in ("", "native", "default"):
        raise ValueError(f"function_calling is 'native' or 'default', not {value!r}")
    return str(value)


def _mode(value: object) -> str:
    if value not in ("", "hybrid", "vector", "bm25"):
        raise ValueError(f"mode is 'hybrid', 'vector' or 'bm25', not {value!r}")
    return str(value)
