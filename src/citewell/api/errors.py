"""The one error handler: every error body is {"detail": message, "code": stable code}."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from citewell.errors import CitewellError
from citewell.metrics import count_error

log = logging.getLogger("citewell.api")


def error_body(
    status: int, detail: str, code: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    count_error(code, status)
    return JSONResponse({"detail": detail, "code": code}, status_code=status, headers=headers)


def _multipart_problem(exc: BaseException) -> str:
    """What was wrong with a multipart body, in words a client can act on."""
    causes: list[str] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < 10:
        causes.append(str(cause).lower())
        cause = cause.__cause__ or cause.__context__
    if any("header" in c for c in causes):
        return (
            "The upload's part headers are too long (over 4 KB): most likely a file name of "
            "thousands of characters. Rename the file; names are kept to 255 characters."
        )
    return (
        "The multipart/form-data body could not be read: send files as form fields named "
        "'file' (or 'files' for a batch), with a boundary that matches the Content-Type header."
    )


def install(app: FastAPI) -> None:
    @app.exception_handler(CitewellError)
    async def citewell_error(_: Request, exc: CitewellError) -> JSONResponse:
        return error_body(exc.status, exc.message, exc.code, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [
            f"{'.'.join(str(p) for p in e['loc'][1:]) or 'body'}: {e['msg']}" for e in exc.errors()
        ]
        return error_body(400, "Invalid request: " + "; ".join(problems), "invalid_input")

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}.get(
            exc.status_code, "http_error"
        )
        if exc.status_code == 400 and str(exc.detail).startswith("Invalid multipart"):
            return error_body(400, _multipart_problem(exc), "invalid_multipart")
        return error_body(exc.status_code, str(exc.detail), code, exc.headers)

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return error_body(
            500, "Internal server error; the server log has the details.", "internal_error"
        )
