"""Adapters (HTTP routes, the CLI, the MCP server) call services and nothing below them.
The import contracts (pyproject.toml) catch what an adapter imports; this catches what it
reaches through the objects it holds: ``app.catalog``, ``view.app.jobs``, ``ctx.app().store``…
Those parts are the services' to use, where each operation checks the caller's access and
records its audit event."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "citewell"
ADAPTERS = [path for part in ("cli", "api", "mcp_server") for path in (SRC / part).rglob("*.py")]
# What the engine is made of: reached only by services and operations.
PARTS = {
    "catalog", "chunk_sets", "connectors", "contexts", "election", "ingestor", "jobs", "live",
    "reader", "rechunker", "renders", "retriever", "runner", "spaces", "storage", "store",
    "uploads", "web", "writer",
}  # fmt: skip
# The names adapters hold the application, a caller's view or a service under.
HOLDERS = {"app", "citewell", "engine", "view", "database", "sync", "knowledge", "ingesting"}


def _holder(node: ast.expr) -> str:
    """The last name of the expression an attribute is taken on (``ctx.app()`` → app)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _reaches(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in PARTS:
            holder = _holder(node.value)
            if holder in HOLDERS:
                found.append(f"{path.name}:{node.lineno}: {holder}.{node.attr}")
    return found


def test_adapters_reach_no_part_of_the_engine():
    assert ADAPTERS
    reaches = [line for path in ADAPTERS for line in _reaches(path)]
    assert reaches == [], "\n".join(reaches)


def test_the_check_sees_a_reach(tmp_path):
    sample = tmp_path / "route.py"
    sample.write_text("def f(app, ctx):\n    app.catalog.get_kb('x')\n    ctx.app().jobs.find()\n")
    assert [line.rsplit(" ", 1)[1] for line in _reaches(sample)] == ["app.catalog", "app.jobs"]
