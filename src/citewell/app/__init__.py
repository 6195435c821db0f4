"""The application root: builds every part once from the settings (``assemble``) and the
``Citewell`` object adapters use: the engine with answering on top (``application``).

Exports are resolved lazily: commands that need only the database (``citewell user``,
``key``) import ``assemble`` without the answering stack."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citewell.app.application import Citewell
    from citewell.app.database import prepare_database

_EXPORTS = {"Citewell": "citewell.app.application", "prepare_database": "citewell.app.database"}

__all__ = ["Citewell", "prepare_database"]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'citewell.app' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
