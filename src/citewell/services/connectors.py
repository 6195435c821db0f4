"""Connectors as one caller sees them: only writers of a KB see and manage its connectors
(another KB's connector answers like a missing one); credentials go in and never come out;
a folder not granted to the caller in ``connector_allowed_paths`` is refused unless the
local operator asks.

A connector acts for its owner (it reads with the owner's folder grants and credentials),
so only the owner or an admin may change what it reads, where it connects and with which
credentials (``options``, ``credentials``); any writer of the KB may pause it, resume it,
sync it now, change its interval or delete it."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from citewell.engine.core import Engine
from citewell.engine.scoped import Scoped
from citewell.errors import ConnectorNotFound, Forbidden, InvalidInput
from citewell.ingest.connector_runs import syncable, syncable_kinds
from citewell.ingest.sync import SyncTally
from citewell.jobs import Job
from citewell.sources.connectors import SyncRequest
from citewell.sources.connectors.store import Connector, SyncStatus

__all__ = ["Connector", "ConnectorService", "ConnectorSpec", "SyncStatus", "SyncTally"]

OPTIONS = (
    "folder",
    "include",
    "exclude",
    "branch",
    "path",
    "allow_empty",
    "endpoint",
    "region",
    "depth",
    "max_pages",
)
CREDENTIALS = (
    "token",
    "username",
    "ssh_key",
    "webhook_secret",
    "access_key_id",
    "secret_access_key",
)


@dataclass(frozen=True)
class ConnectorSpec:
    """What a connector syncs: ``kind`` (folder, git, webdav, s3), ``target`` (a folder, a
    repository URL, a WebDAV folder's URL, s3://bucket/prefix), ``options`` (see OPTIONS),
    write-only ``credentials``, seconds between syncs (0: connector_interval)."""

    kind: str
    target: str
    name: str = ""
    options: Mapping[str, str] | None = None
    credentials: Mapping[str, str] | None = None
    interval: float = 0.0


def _checked(options: Mapping[str, str], allowed: tuple[str, ...], what: str) -> dict[str, str]:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InvalidInput(f"Unknown {what} {', '.join(unknown)}; known: {', '.join(allowed)}.")
    return {k: str(v) for k, v in options.items()}


class ConnectorService:
    def __init__(self, view: Scoped, local: bool = False) -> None:
        """``local``: the operator at the CLI, whom connector_allowed_paths does not limit."""
        self.view, self.app, self.local = view, view.app, local
        self.runs = view.app.connectors
        self.store = self.runs.store

    def of_kb(self, kb: str) -> list[Connector]:
        return self.store.of_kbs([self.view.writable_kb(kb).id])

    def all(self) -> list[Connector]:
        """Connectors of every KB the caller may change."""
        writable = [k.id for k in self.view.kbs() if self.view.access.can_write(k)]
        return self.store.of_kbs(writable)

    def get(self, kb: str, connector_id: str) -> Connector:
        kb_id = self.view.writable_kb(kb).id
        found = self.store.get(connector_id)
        if found is None or found.kb_id != kb_id:
            raise ConnectorNotFound(
                f"No connector {connector_id!r} in this knowledge base; GET "
                "/api/v1/knowledge/{kb}/connectors lists them."
            )
        return found

    def ensure_kb(self, kb: str) -> None:
        """The KB named, made (owned by the caller) if the caller has none of that name."""
        if self.view.find_kb(kb, count_files=False) is None:
            self.view.create_kb(kb)

    def by_id(self, connector_id: str) -> Connector:
        """A connector of any KB the caller may change."""
        found = self.store.get(connector_id)
        if found is None or not self._writable(found.kb_id):
            raise ConnectorNotFound(f"No connector {connector_id!r}; list them first.")
        return found

    def _writable(self, kb_id: str) -> bool:
        kb = self.view.find_kb(kb_id, count_files=False)
        return kb is not None and self.view.access.can_write(kb)

    def create(self, kb: str, spec: ConnectorSpec) -> Connector:
        target_kb = self.view.writable_kb(kb)
        options = _checked(spec.options or {}, OPTIONS, "options")
        credentials = _checked(spec.credentials or {}, CREDENTIALS, "credentials")
        self._check_source(spec.kind, spec.target, options, credentials)
        name = spec.name or spec.target.rstrip("/").rsplit("/", 1)[-1] or spec.kind
        interval, user = self._interval(spec.interval), self.view.access.user_id
        made = self.store.create(
            target_kb.id, spec.kind, name, spec.target, options, credentials, interval, user,
            self.local,
        )  # fmt: skip
        self.view.record("connector.create", "connector", made.id, kind=made.kind, kb=made.kb_id)
        return made

    def update(
        self,
        kb: str,
        connector_id: str,
        options: Mapping[str, str] | None = None,
        credentials: Mapping[str, str] | None = None,
        interval: float | None = None,
        paused: bool | None = None,
    ) -> Connector:
        found = self.get(kb, connector_id)
        changes: dict[str, object] = {}
        checked = None if options is None else _checked(options, OPTIONS, "options")
        if (checked is not None and checked != dict(found.options)) or credentials is not None:
            self._check_owner(found)
        if checked is not None:
            changes["options"] = checked
            stored = self.store.credentials(found.id) if credentials is None else credentials
            self._check_source(
                found.kind, found.target, checked, stored, found.local, found.created_by
            )
        if interval is not None:
            changes["interval"] = self._interval(interval)
        if paused is not None:
            changes["paused"] = paused
        sealed = None if credentials is None else _checked(credentials, CREDENTIALS, "credentials")
        updated = self.store.update(found.id, sealed, **changes)
        assert updated is not None
        changed = sorted([*changes, *(["credentials"] if sealed is not None else [])])
        self.view.record("connector.update", "connector", found.id, changed=changed)
        return updated

    def _check_owner(self, connector: Connector) -> None:
        user = self.view.access.user
        if self.local or user is None or user.is_admin or user.id == connector.created_by:
            return
        raise Forbidden(
            "Only the connector's owner or an admin may change what it reads, where it "
            "connects and its credentials (it reads with its owner's access). You may pause "
            "it, sync it, change its interval, or make a connector of your own."
        )

    def sync_now(self, kb: str, connector_id: str) -> Job:
        """Queue a sync now (or answer the one queued or running)."""
        job = self.runs.queue(self.get(kb, connector_id))
        if self.app.runner is not None:
            self.app.runner.wake()
        return job

    def kinds(self) -> list[str]:
        """The source kinds a connector may have: those whose sources list their entries."""
        return syncable_kinds(self.app.web.source_context())

    def check_kind(self, kind: str) -> None:
        """A 4xx for a kind no connector may have, before anything is made."""
        syncable(kind, self.app.web.source_context())

    def sync_here(self, connector_id: str) -> SyncTally:
        """Sync now, in this process, and wait for it (the CLI's ``sync``)."""
        return self.runs.run(self.by_id(connector_id).id)

    def delete(self, kb: str, connector_id: str, delete_files: bool = False) -> int:
        """The connector goes; its files too with ``delete_files`` (else they stay in the
        KB as files added by hand). Returns how many files left the KB."""
        found = self.get(kb, connector_id)
        removed = self.runs.remove(found, delete_files)
        self.view.record("connector.delete", "connector", found.id, files_removed=removed)
        return removed

    def _interval(self, asked: float) -> float:
        section = self.app.settings.connectors
        interval = asked or section.connector_interval
        if interval < section.connector_min_interval:
            raise InvalidInput(
                f"interval must be at least {section.connector_min_interval:g} seconds "
                "(connector_min_interval)."
            )
        return interval

    def _check_source(
        self,
        kind: str,
        target: str,
        options: Mapping[str, str],
        credentials: Mapping[str, str],
        local: bool | None = None,
        owner: str | None = None,
    ) -> None:
        parts = urlsplit(target)
        if "://" in target and (parts.username or parts.password):
            raise InvalidInput(
                "Put credentials in 'credentials' (token, username), not in the URL: the "
                "target is shown to every writer of the KB."
            )
        context = self.app.web.source_context()
        trusted = self.local if local is None else local
        reader = self.store.reader(self.view.access.user_id if owner is None else owner)
        request = SyncRequest(target, options, credentials, trusted=trusted, reader=reader)
        syncable(kind, context).check(request)


def receive_webhook(app: Engine, connector_id: str, body: bytes, headers: Mapping[str, str]) -> Job:
    """Queue the sync a forge's signed push notification asks for. An unknown connector and
    a wrong signature are the same ConnectorNotFound (nothing tells them apart)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    job = app.connectors.webhook(connector_id, lambda s: webhook_matches(s, body, lowered))
    if job is None:
        raise ConnectorNotFound(f"No connector {connector_id!r} accepts this webhook.")
    if app.runner is not None:
        app.runner.wake()
    return job


def webhook_matches(secret: str, body: bytes, headers: Mapping[str, str]) -> bool:
    """A push notification signed as GitHub, Gitea/Forgejo or GitLab sign them."""
    if not secret:
        return False
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    github = headers.get("x-hub-signature-256", "")
    if github:
        return hmac.compare_digest(github, f"sha256={digest}")
    gitea = headers.get("x-gitea-signature", "") or headers.get("x-forgejo-signature", "")
    if gitea:
        return hmac.compare_digest(gitea, digest)
    gitlab = headers.get("x-gitlab-token", "")
    return bool(gitlab) and hmac.compare_digest(gitlab, secret)
