"""One registry per role: a name → a factory. Built-in backends register in their own package;
a third party adds one by declaring an entry point in the group ``citewell.<role>`` of its
package, e.g. in its pyproject.toml::

    [project.entry-points."citewell.embedders"]
    my-engine = "my_package.citewell:build_embedder"

and then setting ``embedding_engine = "my-engine"``. Entry points are read the first time a
role is asked for its names, so installing a plug-in needs no change to Citewell. The
conformance suite of each role is in ``citewell.testing``; a plug-in runs it against itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from citewell.errors import ConfigError

F = TypeVar("F", bound=Callable[..., object])
logger = logging.getLogger(__name__)

GROUP_PREFIX = "citewell."
# Every role and the setting that picks its backend ("" where all registered backends work
# side by side: loaders by MIME type, job handlers by operation, sources by kind).
ROLES = {
    "loaders": "",
    "ocr": "ocr_engine",
    "splitters": "text_splitter",
    "embedders": "embedding_engine",
    "rerankers": "reranker",
    "llm": "llm_engine",
    "web_search": "web_search_engine",
    "chunk_stores": "store",
    "file_stores": "file_store",
    "job_handlers": "",
    "sources": "",
}


def plugin_names(role: str) -> tuple[str, ...]:
    """The names plug-ins declare for ``role``, without importing them (settings check their
    values against these before anything is built)."""
    return tuple(sorted({ep.name for ep in entry_points(group=GROUP_PREFIX + role)}))


class Registry(Generic[F]):
    """The factories of one role. ``add`` registers a built-in; plug-ins come from entry
    points. A plug-in may not take a built-in's name: it is skipped with a warning."""

    def __init__(self, role: str) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
        self.role = role
        self.setting = ROLES[role]
        self._factories: dict[str, F] = {}
        self._plugins: list[str] = []  # names that came from entry points
        self._broken: dict[str, str] = {}  # plug-in name → why it could not be loaded
        self._loaded = False
        self._lock = threading.Lock()

    @property
    def group(self) -> str:
        return GROUP_PREFIX + self.role

    def add(self, name: str, factory: F) -> F:
        if name in self._factories:
            raise ValueError(f"{self.role}: {name!r} is registered twice")
        self._factories[name] = factory
        return factory

    def register(self, name: str) -> Callable[[F], F]:
        """``@REGISTRY.register("name")`` above a factory function."""
        return lambda factory: self.add(name, factory)

    def names(self) -> tuple[str, ...]:
        """Built-ins in the order they were added, then plug-ins."""
        self._load_plugins()
        return tuple(self._factories)

    def plugins(self) -> tuple[str, ...]:
        """The names entry points added."""
        self._load_plugins()
        return tuple(self._plugins)

    def items(self) -> Iterator[tuple[str, F]]:
        self._load_plugins()
        return iter(list(self._factories.items()))

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._factories

    def get(self, name: str) -> F:
        """The factory named ``name``; a ConfigError saying what there is otherwise."""
        self._load_plugins()
        if name in self._factories:
            return self._factories[name]
        if name in self._broken:
            raise ConfigError(
                f"The {self.role} plug-in {name!r} is installed but could not be loaded "
                f"({self._broken[name]}); reinstall it or pick another."
            )
        what = f"{self.setting} = {name!r}" if self.setting else f"{name!r}"
        raise ConfigError(
            f"{what} is not a known {self.role} backend. Known: {', '.join(self._factories)}. "
            f"A plug-in adds one through the entry point group {self.group!r}."
        )

    def _load_plugins(self) -> None:
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            for ep in entry_points(group=self.group):
                self._load_one(ep.name, ep.load)
            self._loaded = True

    def _load_one(self, name: str, load: Callable[[], object]) -> None:
        if name in self._factories:
            logger.warning("%s plug-in %r ignored: a built-in has that name", self.role, name)
            return
        try:
            factory = load()
        except Exception as exc:  # a plug-in's import error must not stop the server
            logger.warning("%s plug-in %r could not be loaded", self.role, name, exc_info=True)
            self._broken[name] = f"{type(exc).__name__}: {exc}"
            return
        if not callable(factory):
            self._broken[name] = f"its entry point is {type(factory).__name__}, not a factory"
            return
        self._factories[name] = factory  # type: ignore[assignment]
        self._plugins.append(name)
