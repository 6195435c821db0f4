"""The web page: static files served by Citewell itself (no CDN, no build step).

The page is a client of the public API and nothing more: it signs in through
``/api/v1/auth/login`` and sends the key it gets like any other client. Its script renders
document text and names only as text nodes, and the Content-Security-Policy below forbids
inline script, so a document can never run code in Citewell's origin.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

STATIC = Path(__file__).parent / "static"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",  # a new release's page is picked up at once
}


class PageFiles(StaticFiles):
    """The page's scripts and styles, each answer with the page's security headers."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(PAGE_HEADERS)
        return response


def install(app: FastAPI) -> None:
    """Serve the page at / and its files under /ui/."""

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=PAGE_HEADERS)

    app.mount("/ui", PageFiles(directory=STATIC), name="ui")
