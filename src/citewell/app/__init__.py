"""The application root: builds every part once from the settings (``assemble``) and the
``Citewell`` object adapters use: the engine with answering on top (``application``).

Exports are resolved lazily: commands that need only the database (``citewell user``,
``key``) import ``assemble`` without the answering stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

from citewell.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from citewell.app.application import Citewell
    from citewell.app.database import prepare_database

_EXPORTS = {"Citewell": "citewell.app.application", "prepare_database": "citewell.app.database"}

__all__ = ["Citewell", "prepare_database"]

__getattr__ = lazy_exports(__name__, _EXPORTS)
