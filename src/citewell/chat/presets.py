"""Model presets: a model name that binds knowledge bases, a base LLM and a template."""

from __future__ import annotations

import json
from dataclasses import dataclass

from citewell.errors import ConfigError


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


def parse_presets(raw: str) -> dict[str, ModelPreset]:
    if not raw.strip():
        return {}
    try:
        items = json.loads(raw)
        presets = [
            ModelPreset(
                id=str(i["id"]),
                knowledge=tuple(i.get("knowledge", ())),
                base_model=i.get("base_model", ""),
                template=i.get("template", ""),
                system=i.get("system", ""),
                top_k=i.get("top_k"),
                name=i.get("name", ""),
                file_context=bool(i.get("file_context", True)),
                builtin_tools=bool(i.get("builtin_tools", True)),
                function_calling=_function_calling(i.get("function_calling", "")),
                mode=_mode(i.get("mode", "")),
                relevance_threshold=i.get("relevance_threshold"),
                full_context=i.get("full_context"),
            )
            for i in items
        ]
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(
            f"model_presets is not a JSON list of presets with an 'id': {exc}"
        ) from exc
    return {p.id: p for p in presets}


def _function_calling(value: object) -> str:
    if value not in ("", "native", "default"):
        raise ValueError(f"function_calling is 'native' or 'default', not {value!r}")
    return str(value)


def _mode(value: object) -> str:
    if value not in ("", "hybrid", "vector", "bm25"):
        raise ValueError(f"mode is 'hybrid', 'vector' or 'bm25', not {value!r}")
    return str(value)
