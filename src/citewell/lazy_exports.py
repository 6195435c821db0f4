"""A package's exports imported on first use (PEP 562), so that importing one light module
of a package does not import every heavy one its ``__init__`` names.

Used where a cheap start matters: the command line, and the reader's worker processes that
split files (``citewell.ingest.split_where_read``), which need the splitters and the
tokenizer but not the database, the LLM clients or the ONNX runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name in ``where`` is imported from the
    module given for it the first time it is asked for."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(module), name)

    return __getattr__
