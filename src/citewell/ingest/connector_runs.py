"""Running connectors: a connector's source kind (``sources`` registry) lists its entries,
``Syncer`` brings the KB in step, the run's counts become the connector's status. Runs are
``sync`` jobs in the durable queue (key: the connector id): one queued or running per
connector, so one worker runs a given connector at a time; a killed run's job is queued
again when its lease passes, and the rerun finishes it (see ``ingest.sync``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from sqlalchemy.engine import Engine

from citewell.catalog.file_ids import server_key
from citewell.config import Settings
from citewell.errors import CitewellError, ConnectorNotFound, InvalidInput
from citewell.ingest.ingestor import Ingestor
from citewell.ingest.sync import Syncer, SyncScope, SyncTally
from citewell.jobs.states import RUNNING
from citewell.jobs.store import Job, JobStore
from citewell.metrics import count_connector_run
from citewell.sources.connectors import Listing, Syncable, SyncRequest
from citewell.sources.connectors.secrets import CredentialBox
from citewell.sources.connectors.store import Connector, ConnectorStore, SyncStatus
from citewell.sources.registry import SOURCES, SourceContext
from citewell.sources.web import WebReader

logger = logging.getLogger(__name__)
SCHEDULE_EVERY = 5.0  # seconds between looks for connectors that are due


def syncable(kind: str, context: SourceContext) -> Syncable:
    source = SOURCES.get(kind)(context)
    if not isinstance(source, Syncable):
        kinds = ", ".join(syncable_kinds(context))
        raise InvalidInput(f"Source kind {kind!r} cannot be kept in sync; these can: {kinds}.")
    return source


def syncable_kinds(context: SourceContext) -> list[str]:
    """The source kinds (plug-ins' too) whose sources list their entries."""
    return [name for name, make in SOURCES.items() if isinstance(make(context), Syncable)]


class ConnectorRuns:
    def __init__(
        self,
        store: ConnectorStore,
        syncer: Syncer,
        context: SourceContext,
        jobs: JobStore,
        watch: bool = False,
    ) -> None:
        self.store, self.syncer, self.context, self.jobs = store, syncer, context, jobs
        self.watch = watch  # folder connectors are watched where jobs run (folder_watch)
        self._looked = float("-inf")

    def request(self, connector: Connector, cursor: str = "") -> SyncRequest:
        return SyncRequest(
            connector.target,
            connector.options,
            self.store.credentials(connector.id),
            cursor,
            trusted=connector.local,
            reader=self.store.reader(connector.created_by),
        )

    def remove(self, connector: Connector, delete_files: bool) -> int:
        """Delete the connector; with ``delete_files`` the files it brought leave the KB,
        else they stay as files added by hand. Returns how many paths left the KB."""
        self.store.delete(connector.id)
        if not delete_files:
            self.syncer.catalog.synced.release(connector.kb_id, connector.id)
            return 0
        scope = replace(self._scope(connector), allow_empty=True)
        return self.syncer.sync(scope, Listing(iter(()))).deleted

    def webhook(self, connector_id: str, signed: Callable[[str], bool]) -> Job | None:
        """Queue a sync for a push notification whose signature ``signed`` accepts with
        the connector's webhook secret; None (as for an unknown connector) otherwise."""
        connector = self.store.get(connector_id)
        if connector is None or connector.paused:
            return None
        if not signed(self.store.credentials(connector.id).get("webhook_secret", "")):
            return None
        return self.queue(connector, after_running=True)

    def run(self, connector_id: str) -> SyncTally:
        """One sync of the connector, its status recorded (raised errors fail the run)."""
        connector = self.store.get(connector_id)
        if connector is None:
            raise ConnectorNotFound(f"No connector {connector_id!r}; it was deleted.")
        started = SyncStatus("running", started_at=time.time())
        shown = replace(connector.status, state="running", started_at=started.started_at)
        self.store.set_status(connector.id, shown)
        try:
            source = syncable(connector.kind, self.context)
            listing = source.listing(self.request(connector, connector.cursor))
            tally = self.syncer.sync(self._scope(connector), listing, self._progress(connector))
        except CitewellError as exc:
            failed = replace(started, state="failed", finished_at=time.time(), message=exc.message)
            self.store.set_status(connector.id, failed)
            count_connector_run(connector.kind, "failed")
            raise
        self.store.set_status(connector.id, _status(started, tally), listing.cursor)
        count_connector_run(connector.kind, "ok" if not tally.failed else "some_failed")
        return tally

    def sync_once(self, connector: Connector, listing: Listing | None = None) -> SyncTally:
        """A run in this process, outside the queue (``citewell sync`` without a server)."""
        if listing is None:
            source = syncable(connector.kind, self.context)
            listing = source.listing(self.request(connector, connector.cursor))
        return self.syncer.sync(self._scope(connector), listing)

    def _scope(self, connector: Connector) -> SyncScope:
        return SyncScope(
            connector.kb_id,
            connector.id,
            connector.folder,
            connector.kind,
            added_by=connector.created_by,
            allow_empty=connector.options.get("allow_empty", "") in ("1", "true"),
        )

    def _progress(self, connector: Connector) -> Callable[[SyncTally], None]:
        started = time.time()

        def report(tally: SyncTally) -> None:
            running = _status(SyncStatus("running", started_at=started), tally)
            self.store.set_status(connector.id, replace(running, state="running", finished_at=0))

        return report

    # --- the schedule --------------------------------------------------------------------
    def queue(self, connector: Connector, after_running: bool = False) -> Job:
        """A sync job for the connector, unless one is queued or running (that one).
        ``after_running``: the source changed just now, so a running sync (which may have
        listed it before) is not enough: one more is queued behind it. A new job is this
        interval's run: the schedule's next one moves an interval on (else a new
        connector's first sync would be followed at once by a scheduled second)."""
        job, new = self._queue(connector, after_running)
        if new:
            self.store.reschedule(connector.id, time.time() + connector.interval)
        return job

    def _queue(self, connector: Connector, after_running: bool = False) -> tuple[Job, bool]:
        states = ("queued",) if after_running else ("queued", *RUNNING)
        waiting = self.jobs.unfinished("sync", connector.id, states)
        if waiting is not None:
            return waiting, False
        job_id = self.jobs.new_id()
        job = self.jobs.enqueue(
            connector.kb_id, [(job_id, f"sync {connector.name}", connector.id)], 1, "sync"
        )[0]
        if connector.status.state != "running":
            self.store.set_status(connector.id, replace(connector.status, state="queued"))
        return job, True

    def queue_due(self, force: bool = False) -> int:
        """Queue a sync of every connector whose time has come (every SCHEDULE_EVERY s)."""
        now = time.time()
        if not force and now - self._looked < SCHEDULE_EVERY:
            return 0
        self._looked = now
        queued = 0
        for connector in self.store.due(now):
            if self.store.take_turn(connector, now + connector.interval):
                self._queue(connector)
                queued += 1
        return queued


def _status(started: SyncStatus, tally: SyncTally) -> SyncStatus:
    return SyncStatus(
        state="ok",
        started_at=started.started_at,
        finished_at=time.time(),
        added=tally.added,
        updated=tally.updated,
        deleted=tally.deleted,
        unchanged=tally.unchanged,
        failed=tally.failed,
        chunks_embedded=tally.chunks_embedded,
        message="",
        errors=tuple(tally.errors),
    )


def connector_runs(
    settings: Settings, engine: Engine, ingestor: Ingestor, web: WebReader, jobs: JobStore
) -> ConnectorRuns:
    """The connectors of one database, their credentials sealed with connector_secret_key
    (or the server's own key, made once and kept in the database)."""
    secret = settings.connectors.connector_secret_key or server_key(engine, "connectors")
    store = ConnectorStore(engine, CredentialBox(secret))
    context = SourceContext(settings, web)
    watch = settings.connectors.connector_watch
    return ConnectorRuns(store, Syncer(ingestor), context, jobs, watch)
