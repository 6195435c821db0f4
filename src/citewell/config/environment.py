"""Reading settings from where operators put them: the environment and a TOML file.

A setting is set by ``CITEWELL_<NAME>``, by its plain name, or by Open WebUI's name for it
(so an operator's settings carry over); names are matched without regard to case. A config
file holds plain names at its top level or in tables named after the sections."""

from __future__ import annotations

import json
import logging
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from citewell.config.fields import env_names
from citewell.errors import ConfigError

log = logging.getLogger(__name__)


def read_environment(fields: Mapping[str, FieldInfo]) -> dict[str, Any]:
    """The settings the environment sets, by plain name (the first of a setting's names
    found wins: its plain name, then CITEWELL_…, then Open WebUI's)."""
    environ = {key.lower(): value for key, value in os.environ.items()}
    found: dict[str, Any] = {}
    for name, info in fields.items():
        for env in (name, *env_names(name, info)):
            if env.lower() in environ:
                found[name] = _decoded(name, env, info, environ[env.lower()])
                break
    return found


def _decoded(name: str, env: str, info: FieldInfo, text: str) -> Any:
    """Lists and mappings are JSON in the environment; everything else is checked by its
    section as text."""
    if get_origin(info.annotation) not in (list, dict):
        return text
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"Invalid settings: {name} = {text!r} (from the environment variable {env}) "
            'must be JSON, e.g. ["\\n\\n", "."].'
        ) from exc


def read_config_file(
    path: Path | None,
    sections: Mapping[str, type[BaseModel]],
    fields: Mapping[str, FieldInfo],
) -> dict[str, Any]:
    """The settings a TOML file sets, by plain name; unknown names are ignored with a
    warning (a file written for another release still starts the server)."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        message = f"Config file {path} cannot be read: {exc}. Fix it or leave it out."
        raise ConfigError(message) from exc
    found: dict[str, Any] = {}
    for key, value in data.items():
        if key in sections and isinstance(value, dict):
            table = {k: v for k, v in value.items() if k in sections[key].model_fields}
            _warn_unknown(path, [f"{key}.{k}" for k in value if k not in table])
            found.update(table)
        elif key in fields:
            found[key] = value
        else:
            _warn_unknown(path, [key])
    return found


def _warn_unknown(path: Path, names: list[str]) -> None:
    if names:
        log.warning("Config file %s: ignoring unknown settings %s", path, ", ".join(names))
