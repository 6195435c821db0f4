"""Dify's external knowledge API: ``POST /api/v1/dify/retrieval``. In Dify, add an external
knowledge API with the endpoint ``http://HOST:8080/api/v1/dify`` (Dify appends
``/retrieval``) and a Citewell API key; the external knowledge id is a KB's id or name.

Failures answer as Dify documents them, ``{"error_code", "error_msg"}``: 1001 (403) for an
Authorization header that is not ``Bearer <key>``, 1002 (403) for a key that is not valid,
2001 (404) for a knowledge id the key may not read, which includes another tenant's KB."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from citewell.api.deps import CitewellDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.security import Authenticator
from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.errors import NotFoundError, Unauthenticated
from citewell.services.dify import DifyRetrieval, condition

router = APIRouter(prefix="/api/v1/dify", tags=["dify"], route_class=OffLoopJsonRoute)


class RetrievalSetting(BaseModel):
    top_k: Annotated[int, Field(ge=1, le=100)]
    score_threshold: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0


class MetadataConditionItem(BaseModel):
    name: str | list[str]
    comparison_operator: str
    value: str | float | int | list[str] | None = None


class MetadataCondition(BaseModel):
    logical_operator: str = "and"
    conditions: list[MetadataConditionItem] = []


class DifyRetrievalCreate(BaseModel):
    knowledge_id: Annotated[str, Field(min_length=1)]
    query: Annotated[str, Field(min_length=1)]
    retrieval_setting: RetrievalSetting
    metadata_condition: MetadataCondition | None = None


class DifyRecordPublic(BaseModel):
    content: str
    score: float
    title: str
    metadata: dict[str, Any]


class DifyRetrievalPublic(BaseModel):
    records: list[DifyRecordPublic]


class DifyErrorPublic(BaseModel):
    error_code: int
    error_msg: str


def _failure(status: int, code: int, message: str) -> JSONResponse:
    return JSONResponse({"error_code": code, "error_msg": message}, status_code=status)


BAD_HEADER = (403, 1001, "Invalid Authorization header format. Expected 'Bearer <api-key>' format.")
BAD_KEY = (
    403,
    1002,
    "Authorization failed: that Citewell API key is not valid (revoked, expired or "
    "mistyped). Make one with `citewell key create` or on the page's Keys tab.",
)


def _caller(request: Request) -> Access | tuple[int, int, str]:
    """The caller's access, or the Dify error to answer."""
    auth: Authenticator = request.app.state.auth
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if auth.required and (scheme.lower() != "bearer" or not key.strip()):
        return BAD_HEADER
    try:
        return auth.access(key.strip() or None)
    except Unauthenticated:
        return BAD_KEY


@router.post(
    "/retrieval",
    response_model=DifyRetrievalPublic,
    responses={403: {"model": DifyErrorPublic}, 404: {"model": DifyErrorPublic}},
)
def retrieval(
    body: DifyRetrievalCreate, request: Request, app: CitewellDep
) -> DifyRetrievalPublic | JSONResponse:
    """Passages of one knowledge base for a query, best first, in Dify's shape: each with
    its ``content``, ``score`` (0-1), ``title`` (the file as the KB names it) and
    ``metadata`` (``path``, ``file_id``, ``file_name``, ``folder``, ``url``, ``page``,
    ``start``/``end`` in the file's text, ``chunk_id``, ``knowledge_id``). Metadata
    conditions may name those fields and ``added_at``."""
    caller = _caller(request)
    if isinstance(caller, tuple):
        return _failure(*caller)
    wanted = body.metadata_condition or MetadataCondition()
    conditions = [condition(c.name, c.comparison_operator, c.value) for c in wanted.conditions]
    try:
        found = DifyRetrieval(Scoped(app, caller)).retrieve(
            body.knowledge_id,
            body.query,
            body.retrieval_setting.top_k,
            body.retrieval_setting.score_threshold,
            conditions,
            any_of=wanted.logical_operator.lower() == "or",
        )
    except NotFoundError:
        return _failure(
            404,
            2001,
            f"The knowledge does not exist: no knowledge base {body.knowledge_id!r} "
            "that this API key may read (give its id or name).",
        )
    return DifyRetrievalPublic(records=[DifyRecordPublic(**vars(r)) for r in found])
