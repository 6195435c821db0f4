"""Connectors: sources a knowledge base keeps in sync with (a folder on the server, a git
repository). Only writers of the KB see and manage them; credentials are write-only. The
push webhook needs no key: the forge signs the request with the connector's secret."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from citewell.api.deps import CitewellDep, ViewDep
from citewell.api.hygiene import OffLoopJsonRoute
from citewell.api.schemas import JobPublic
from citewell.services.connectors import (
    Connector,
    ConnectorService,
    ConnectorSpec,
    SyncStatus,
    receive_webhook,
)

router = APIRouter(
    prefix="/api/v1/knowledge/{kb}/connectors", tags=["connectors"], route_class=OffLoopJsonRoute
)
hooks = APIRouter(prefix="/api/v1/connectors", tags=["connectors"])

Options = dict[str, Annotated[str, Field(max_length=2000)]]


def get_connectors(view: ViewDep) -> ConnectorService:
    return ConnectorService(view)


ConnectorsDep = Annotated[ConnectorService, Depends(get_connectors)]


class ConnectorCreate(BaseModel):
    kind: str = Field(description="folder or git (or a plug-in's syncable source kind).")
    target: str = Field(
        max_length=2000,
        description="A folder on the server (under connector_allowed_paths) or a repository "
        "URL (https, http, git, ssh).",
    )
    name: str = Field("", max_length=200, description="Unique in the KB; default: the target's.")
    options: Options = Field(
        default_factory=dict,
        description="folder (where its files go in the KB), include and exclude (comma-"
        "separated globs), branch and path (git), allow_empty ('true': an empty listing "
        "deletes everything it synced).",
    )
    credentials: Options = Field(
        default_factory=dict,
        description="Write-only: token and username (git over https), webhook_secret "
        "(verifies push webhooks). Encrypted at rest, never returned.",
    )
    interval: float = Field(
        0.0, ge=0, le=31_536_000, description="Seconds between syncs (0: connector_interval)."
    )


class ConnectorUpdate(BaseModel):
    options: Options | None = None
    credentials: Options | None = Field(None, description="Replaces the stored credentials.")
    interval: float | None = Field(None, gt=0, le=31_536_000)
    paused: bool | None = Field(None, description="A paused connector is not synced.")


class SyncStatusPublic(BaseModel):
    state: str = Field(description="never, queued, running, ok or failed.")
    started_at: float
    finished_at: float
    added: int
    updated: int
    deleted: int
    unchanged: int
    failed: int
    chunks_embedded: int
    message: str = Field(description="Why the last run failed ('' when it did not).")
    errors: list[str] = Field(description="Items that failed in the last run (retried next).")

    @classmethod
    def of(cls, status: SyncStatus) -> SyncStatusPublic:
        return cls(**{**status.__dict__, "errors": list(status.errors)})


class ConnectorPublic(BaseModel):
    id: str
    knowledge_base_id: str
    kind: str
    name: str
    target: str
    options: dict[str, str]
    credentials: list[str] = Field(description="Always []: credentials are never returned.")
    has_credentials: bool
    interval: float
    paused: bool
    created_at: float
    updated_at: float
    next_run_at: float
    cursor: str = Field(description="Where the source stood at the last sync (a git commit).")
    status: SyncStatusPublic

    @classmethod
    def of(cls, c: Connector) -> ConnectorPublic:
        return cls(
            id=c.id,
            knowledge_base_id=c.kb_id,
            kind=c.kind,
            name=c.name,
            target=c.target,
            options=dict(c.options),
            credentials=[],
            has_credentials=c.has_credentials,
            interval=c.interval,
            paused=c.paused,
            created_at=c.created_at,
            updated_at=c.updated_at,
            next_run_at=c.next_run_at,
            cursor=c.cursor,
            status=SyncStatusPublic.of(c.status),
        )


class RemovedPublic(BaseModel):
    id: str
    files_removed: int


@router.get("")
def list_connectors(kb: str, connectors: ConnectorsDep) -> list[ConnectorPublic]:
    """The KB's connectors (you need write access to it)."""
    return [ConnectorPublic.of(c) for c in connectors.of_kb(kb)]


@router.post("", status_code=201)
def create_connector(kb: str, body: ConnectorCreate, connectors: ConnectorsDep) -> ConnectorPublic:
    """Bind a source to the KB; its first sync is queued at once."""
    spec = ConnectorSpec(
        body.kind, body.target, body.name, body.options, body.credentials, body.interval
    )
    made = connectors.create(kb, spec)
    connectors.sync_now(kb, made.id)
    return ConnectorPublic.of(connectors.get(kb, made.id))


@router.get("/{connector_id}")
def get_connector(kb: str, connector_id: str, connectors: ConnectorsDep) -> ConnectorPublic:
    return ConnectorPublic.of(connectors.get(kb, connector_id))


@router.patch("/{connector_id}")
def update_connector(
    kb: str, connector_id: str, body: ConnectorUpdate, connectors: ConnectorsDep
) -> ConnectorPublic:
    """Change options, credentials or interval, or pause and resume it."""
    updated = connectors.update(
        kb, connector_id, body.options, body.credentials, body.interval, body.paused
    )
    return ConnectorPublic.of(updated)


@router.post("/{connector_id}/sync", status_code=202)
def sync_connector(kb: str, connector_id: str, connectors: ConnectorsDep) -> JobPublic:
    """Queue a sync now (or answer the one already queued or running)."""
    return JobPublic.of(connectors.sync_now(kb, connector_id))


@router.delete("/{connector_id}")
def delete_connector(
    kb: str, connector_id: str, connectors: ConnectorsDep, delete_files: bool = False
) -> RemovedPublic:
    """Delete the connector; its files stay in the KB unless ``delete_files``."""
    removed = connectors.delete(kb, connector_id, delete_files)
    return RemovedPublic(id=connector_id, files_removed=removed)


@hooks.post("/{connector_id}/webhook", status_code=202)
async def push_webhook(connector_id: str, request: Request, citewell: CitewellDep) -> JobPublic:
    """A forge's push notification (GitHub, GitLab, Gitea/Forgejo), signed with the
    connector's webhook_secret: its sync is queued at once. An unknown connector and a
    wrong signature get the same 404."""
    body = await request.body()
    job = await run_in_threadpool(
        receive_webhook, citewell, connector_id, body, dict(request.headers)
    )
    return JobPublic.of(job)
