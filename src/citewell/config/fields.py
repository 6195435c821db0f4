"""How a setting is declared: its default, its documentation, the environment names that set
it (Open WebUI's included) and where else it may be set (its scopes)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from citewell.plugins import plugin_names


@dataclass(frozen=True)
class Scopes:
    """Where a setting may be set besides the environment and config file read at start-up."""

    runtime: bool = False  # by an admin while the server runs (/api/v1/retrieval/config)
    kb_files: bool = False  # by a knowledge base for its own files (chunking, indexing)
    kb: bool = False  # by a knowledge base as its retrieval default (catalog.kb_settings)
    request: bool = False  # by a search or chat request, or a model preset
    space: bool = False  # part of what defines an embedding space (a change re-embeds)

    def words(self) -> list[str]:
        """The scopes in words, for the configuration reference."""
        words = {
            "runtime": "run time",
            "kb_files": "per KB (its files)",
            "kb": "per KB",
            "request": "per request",
            "space": "embedding space",
        }
        return [word for key, word in words.items() if getattr(self, key)]


NO_SCOPES = Scopes()


class Section(BaseModel):
    """A group of settings that belong together; a component receives the sections it
    needs. Immutable: a change makes new settings (``Settings.with_values``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


def setting(
    default: Any, doc: str, *aliases: str, scopes: Scopes = NO_SCOPES, **bounds: Any
) -> Any:
    """A field settable by its ``CITEWELL_`` name, its plain name and any Open WebUI aliases."""
    extra = {"aliases": list(aliases), "scopes": scopes}
    return Field(default, description=doc, json_schema_extra=extra, **bounds)  # type: ignore[arg-type]


def scopes_of(info: FieldInfo) -> Scopes:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    found = extra.get("scopes")
    return found if isinstance(found, Scopes) else NO_SCOPES


def env_names(name: str, info: FieldInfo) -> list[str]:
    """Environment variable names that set field ``name``, Citewell's first."""
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    aliases = extra.get("aliases", [])
    return [f"CITEWELL_{name.upper()}", *(str(a) for a in aliases)]  # type: ignore[union-attr]


# role → the values its setting takes without a plug-in (built-ins, and "auto"/"off"/"")
BUILTIN_BACKENDS: dict[str, tuple[str, ...]] = {}


def backend(role: str, *builtins: str) -> AfterValidator:
    """A setting that names a backend of ``role``: a built-in or an installed plug-in's name
    (checked by entry point name only: nothing is imported until it is built)."""
    BUILTIN_BACKENDS[role] = builtins

    def check(value: str) -> str:
        if value in builtins or value in plugin_names(role):
            return value
        known = ", ".join(repr(name) for name in (*builtins, *plugin_names(role)))
        raise ValueError(
            f"must be one of {known}, or the name of a plug-in installed in the entry point "
            f"group 'citewell.{role}'"
        )

    return AfterValidator(check)


# Every setting's field, by name, across the sections (filled in by config.settings).
ALL_FIELDS: dict[str, FieldInfo] = {}

# The config file being read by Settings.load (messages name it as a value's source).
CONFIG_FILE: dict[str, Path | None] = {"path": None}


def source_of(name: str, value: object) -> str:
    """Where a setting's value came from, for messages: the environment variable holding it,
    the config file, or an option."""
    info = ALL_FIELDS.get(name)
    for env in env_names(name, info) if info is not None else []:
        if os.environ.get(env) == str(value):
            return f"the environment variable {env}"
    if CONFIG_FILE.get("path") is not None:
        return f"the config file {CONFIG_FILE['path']}"
    return "a command-line option"
