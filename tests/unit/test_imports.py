"""Every module imports on its own, first, and no two modules import each other, directly
or around a circle (type-only imports and imports inside functions count too)."""

import ast
import importlib
import pkgutil
import sys
from pathlib import Path

import pytest

import citewell

MODULES = sorted(m.name for m in pkgutil.walk_packages(citewell.__path__, "citewell."))


@pytest.mark.parametrize("name", [m for m in MODULES if not m.endswith("__main__")])
def test_module_imports_first(name):
    saved = {k: v for k, v in sys.modules.items() if k.startswith("citewell.")}
    for key in saved:
        del sys.modules[key]
    try:
        importlib.import_module(name)
    finally:
        for key in [k for k in sys.modules if k.startswith("citewell.")]:
            del sys.modules[key]
        sys.modules.update(saved)
        # Importing afresh also rebound each package's attribute for its submodule (on the
        # kept top-level package too); point them back, or "citewell.x.y" paths that
        # monkeypatch resolves would reach the fresh copies, not the modules in use.
        for key, module in saved.items():
            parent, _, child = key.rpartition(".")
            setattr(sys.modules[parent], child, module)


# --- the plan: no import cycle, type-only imports and imports inside functions included ---
SOURCE = Path(citewell.__file__).parent


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(module: str, path: Path, known: set[str]) -> set[str]:
    """The citewell modules ``module`` imports anywhere in its text (a name imported from a
    package counts as that package's module when it is one)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            target = name
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("citewell") and target != module:
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module_of(path): path for path in SOURCE.rglob("*.py")}
    known = set(paths)
    # A package importing its own modules (re-exports in __init__) is not an arrow of the plan.
    return {
        module: {d for d in _imported(module, path, known) if not d.startswith(module + ".")}
        for module, path in paths.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_anywhere():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_sees_type_only_and_deferred_imports():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    real = _graph()
    # citewell.ingest.chunk_rows imports ChunkTarget from ingest.types; cli_server imports the
    # server's app factory inside a function: both are arrows here.
    assert "citewell.ingest.types" in real["citewell.ingest.chunk_rows"]
    assert "citewell.api.app" in real["citewell.cli.server"]
