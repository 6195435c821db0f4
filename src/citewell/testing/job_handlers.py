"""The job handler role's conformance suite. Subclass it and give ``operation`` (its name),
``handler_factory`` (the factory registered for it) and ``enqueue`` (a function that queues
one job of that operation, given the JobContext and a knowledge base id, and returns it).
The suite provides ``context``: a fresh application's job queue, storage and ingestor."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.engine.job_handlers import JobContext
from citewell.errors import CitewellError
from citewell.jobs.store import Job
from citewell.testing.fakes import FakeHashEmbedder

Enqueue = Callable[[JobContext, str], Job]


class JobHandlerConformance:
    @pytest.fixture
    def app(self, tmp_path: Path) -> Iterator[Citewell]:
        settings = Settings.load(data_dir=tmp_path / "data")
        app = Citewell.from_settings(settings, embedder=FakeHashEmbedder(32))
        yield app
        app.close()

    @pytest.fixture
    def context(self, app: Citewell) -> JobContext:
        failures: list[tuple[Job, CitewellError]] = []

        def fail(job: Job, error: CitewellError) -> None:
            failures.append((job, error))
            app.jobs.fail(job.id, error.message, error.code, None, job.claim)

        return JobContext(app.jobs, app.storage, app.ingestor, fail)

    def test_ready_says_yes_or_no(self, handler_factory, context) -> None:  # type: ignore[no-untyped-def]
        handler = handler_factory(context)
        assert handler is None or handler.ready() in (True, False)

    def test_a_claimed_job_ends_done_or_failed(  # type: ignore[no-untyped-def]
        self, operation, handler_factory, enqueue, context, app
    ) -> None:
        handler = handler_factory(context)
        assert handler is not None and handler.ready()
        kb = app.create_kb("conformance")
        job = enqueue(context, kb.id)
        (claimed,) = context.jobs.claim(1, [operation])
        assert claimed.id == job.id
        handler.run(kb.id, [claimed])
        ended = context.jobs.get(job.id)
        assert ended.done or ended.state == "queued"  # queued: a retry is due later
