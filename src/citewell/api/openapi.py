"""The OpenAPI schema says which errors each operation answers with, in the one error shape
({"detail", "code"}); FastAPI's default 422 is gone, since invalid input is a 400 here."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from citewell.api.schemas import ErrorPublic

ERROR_TEXT = {
    400: "Invalid input (the detail says which field and why).",
    401: "No API key, or not a valid one.",
    403: "The key may not do this (read-only, limited to other KBs, or not an admin), or a "
    "URL points at an address that is not fetched.",
    404: "Not found, or not yours to see.",
    409: "The name is taken (names are unique per owner), or a knowledge base name matches "
    "several KBs you may read (name it by its id).",
    413: "The request body or a file is too large.",
    415: "A file type that cannot be read.",
    422: "The file or page could not be turned into text.",
    429: "Too many requests with this key; see Retry-After.",
    502: "An upstream service (LLM, embeddings, a web page) failed.",
    504: "An upstream service took too long.",
}
PUBLIC_PATHS = ("/healthz", "/readyz", "/api/v1/auth/login")
# Errors beyond the common ones, by the operation's tag.
BY_TAG = {
    "knowledge": (415, 422, 502),
    "retrieval": (415, 422, 502, 504),
    "rag": (502, 504),
    "openai": (502, 504),
    "open-webui": (415, 422, 502),  # its uploads are indexed before the answer
    "connectors": (502, 504),  # a source's host is resolved when a connector is made
    "dify": (502, 504),
}


def _codes(path: str, operation: dict[str, Any]) -> list[int]:
    if path in ("/healthz", "/readyz"):
        return []
    codes = [400, 401, 429] if path in PUBLIC_PATHS else [400, 401, 403, 404, 409, 429]
    if "requestBody" in operation:
        codes.append(413)
    for tag in operation.get("tags", ()):
        codes.extend(BY_TAG.get(tag, ()))
    return sorted(set(codes))


def _error_response(code: int) -> dict[str, Any]:
    ref = {"$ref": "#/components/schemas/ErrorPublic"}
    return {"description": ERROR_TEXT[code], "content": {"application/json": {"schema": ref}}}


def documented_errors(app: FastAPI) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            components["ErrorPublic"] = ErrorPublic.model_json_schema()
            for name in ("HTTPValidationError", "ValidationError"):
                components.pop(name, None)
            for path, item in schema["paths"].items():
                for operation in item.values():
                    responses = operation.setdefault("responses", {})
                    responses.pop("422", None)
                    for code in _codes(path, operation):
                        responses.setdefault(str(code), _error_response(code))
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
