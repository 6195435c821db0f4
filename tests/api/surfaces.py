"""Every surface a caller can reach on a running Citewell: each HTTP route (method and path,
those left out of the OpenAPI document too) and each MCP tool. The two-tenant suite holds
each one to the tenancy rule and fails for one it does not know."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from fastapi.routing import APIRoute

DOCS = {"/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/docs-assets", "/ui", "/"}


def http_routes(app: Any) -> set[tuple[str, str]]:
    """(method, path) of every route of the ASGI app, the page's and docs' files left out."""
    return {(m, p) for m, p in _walk(app.routes, "") if p not in DOCS}


def _walk(routes: Iterable[Any], prefix: str) -> Iterator[tuple[str, str]]:
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:  # a router included with a prefix
            yield from _walk(inner.routes, prefix + route.include_context.prefix)
        elif isinstance(route, APIRoute):
            path = prefix + route.path.replace(":path}", "}")
            yield from ((method, path) for method in route.methods if method != "HEAD")
        elif getattr(route, "path", None):
            yield ("ANY", prefix + route.path)  # a mounted ASGI app: /mcp
