"""`citewell ingest`: files, folders and web pages into a knowledge base, with progress."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from citewell.cli.common import Context, click_errors, pass_app
from citewell.machine import lower_priority


@click.command()
@click.argument("targets", nargs=-1, required=True, metavar="PATH|URL...")
@click.option("--kb", default="default", show_default=True, help="Knowledge base to add to.")
@click.option(
    "--source",
    default="",
    metavar="KIND",
    help="Read every target through this source kind (url, youtube, web-search, path, or "
    "a plug-in's); by default a URL is fetched and anything else is a path.",
)
@click.option(
    "--queue",
    is_flag=True,
    help="Queue the files as durable jobs and run them here, showing the batch's progress; "
    "what is left when interrupted runs in the server or `citewell worker`.",
)
@click.option(
    "--estimate",
    is_flag=True,
    help="Only say what it would take (chunks; LLM calls and prompt tokens of "
    "contextual_chunks and document_summary); store nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@pass_app
def ingest(
    ctx: Context,
    targets: tuple[str, ...],
    kb: str,
    source: str,
    queue: bool,
    estimate: bool,
    as_json: bool,
) -> None:
    """Add files, folders (recursively) and web pages to a knowledge base.

    A URL may be a page, a remote file (PDF, DOCX…) or a YouTube video (its transcript)."""
    if estimate:
        _estimate(ctx, targets, kb, as_json, source)
        return
    if queue:
        _ingest_queued(ctx, targets, kb, as_json, source)
        return
    with click_errors(), progress("Ingesting") as report_progress:
        report = ctx.ingesting().ingest(targets, kb, report_progress, source)
    _wait_for_training(ctx.app())
    if as_json:
        click.echo(json.dumps(asdict(report), indent=2))
        return
    click.echo(
        f"{report.files_seen} files: {report.files_indexed} indexed, "
        f"{report.files_linked} linked (same bytes already stored), "
        f"{report.files_unchanged} unchanged, {report.files_failed} failed; "
        f"{report.chunks_stored} chunks stored, {report.chunks_embedded} texts embedded "
        "(the rest came from the cache)."
    )
    for error in report.errors:
        click.echo(f"  failed: {error}", err=True)


@click.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--kb", default="default", show_default=True, help="Knowledge base to add to.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "--priority",
    type=click.Choice(["low", "normal"]),
    default="low",
    show_default=True,
    help="CPU priority of the import and the processes it starts. low: a server on this "
    "machine answers searches first (the import takes what CPU they leave); normal: as "
    "fast as the machine allows, searches or not.",
)
@pass_app
def import_chunks(ctx: Context, path: Path, kb: str, as_json: bool, priority: str) -> None:
    """Add chunks with their vectors from a Parquet or JSON Lines file (columns file, text,
    vector; page, headings, url): nothing is parsed or embedded, so it moves a corpus in
    from another system at the speed of the writes. The vectors must come from the model
    this server embeds queries with."""
    if priority == "low":  # before the store's threads and the import's processes start,
        lower_priority()  # so that they inherit it
    with click_errors():
        report = ctx.ingesting().import_chunks(path, kb, _import_progress)
    _wait_for_training(ctx.app())
    if as_json:
        click.echo(json.dumps({**asdict(report), "chunks_per_second": report.chunks_per_second}))
        return
    click.echo(
        f"{report.files_seen} files: {report.files_imported} imported "
        f"({report.files_replaced} replacing an older text), {report.files_unchanged} "
        f"unchanged; {report.chunks_stored} chunks in {report.seconds:.1f} s "
        f"({report.chunks_per_second:,.0f} chunks/s)."
    )


def _import_progress(report: Any) -> None:
    click.echo(f"  {report.chunks_stored:,} chunks of {report.files_imported:,} files", err=True)


def _estimate(ctx: Context, targets: tuple[str, ...], kb: str, as_json: bool, source: str) -> None:
    from citewell.sources.web import is_url

    if any(is_url(t) for t in targets):
        raise click.UsageError("--estimate takes files and folders, not URLs.")
    with click_errors():
        ingesting = ctx.ingesting()
        found = ingesting.estimate(ingesting.items(targets, source), kb)
    cost = found.enrich
    if as_json:
        click.echo(json.dumps({"files": found.files, "chunks": found.chunks, **asdict(cost)}))
        return
    click.echo(f"{found.files} files, {found.chunks} chunks.")
    if ingesting.enriches:
        click.echo(
            f"LLM: {cost.llm_calls} calls, about {cost.prompt_tokens} prompt tokens "
            f"({cost.cached} contexts or summaries already cached)."
        )
    else:
        click.echo("No LLM calls: contextual_chunks and document_summary are off.")


def _ingest_queued(
    ctx: Context, targets: tuple[str, ...], kb: str, as_json: bool, source: str
) -> None:
    from citewell.sources.web import is_url

    if any(is_url(t) for t in targets):
        raise click.UsageError("--queue takes files and folders; ingest URLs without it.")
    with click_errors():
        ingesting = ctx.ingesting()
        items = ingesting.items(targets, source)
        jobs = ingesting.queue(items, kb) if items else []
    if not jobs:
        click.echo("No files to ingest.", err=True)
        return
    batch, app = jobs[0].batch_id, ctx.app()
    app.start_workers()
    try:
        with _job_progress(ingesting, batch) as watch:
            watch()
    except KeyboardInterrupt:
        click.echo(f"Stopped; the batch's unfinished jobs stay queued (batch {batch}).", err=True)
    finally:
        app.close()
    _wait_for_training(app)
    _print_batch(ingesting.batch(batch), batch, as_json)


def _wait_for_training(app: Any) -> None:
    """The ingest grew the store past twice what its vector index was trained on, and the
    new training runs in this process: exiting would lose it (the next write starts it
    again, and a short ingest would lose it again)."""
    if app.wait_for_index_training(0):
        return
    click.echo(
        "Training the vector index anew for the grown store (about a minute per million "
        "chunks); waiting for it. Ctrl-C stops waiting: the next write starts it again.",
        err=True,
    )
    try:
        app.wait_for_index_training()
    except KeyboardInterrupt:
        click.echo("Stopped waiting; the index stays as it was.", err=True)


def _print_batch(state: Any, batch: str, as_json: bool) -> None:
    counts: dict[str, int] = state.counts
    failed: list[str] = state.errors
    if as_json:
        click.echo(json.dumps({"batch_id": batch, "counts": counts, "errors": failed}, indent=2))
        return
    summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    click.echo(f"{sum(counts.values())} files (batch {batch}): {summary}.")
    for error in failed:
        click.echo(f"  failed: {error}", err=True)


def _progress_bar() -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files · {task.fields[chunks]} chunks · {task.fields[rate]} chunks/s"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    ]
    return Progress(*columns, console=Console(stderr=True), transient=False)


@contextmanager
def progress(label: str) -> Iterator[Callable[[Any], None]]:
    """A progress bar fed by the ingestor's progress callback (in-process ingestion)."""
    with _progress_bar() as bar:
        task = bar.add_task(label, total=None, chunks=0, rate="0.0")

        def update(state: Any) -> None:
            elapsed = bar.tasks[0].elapsed or 1e-9
            bar.update(
                task,
                total=state.files_total,
                completed=state.files_done,
                chunks=state.chunks_done,
                rate=f"{state.chunks_done / elapsed:.1f}",
            )

        yield update


@contextmanager
def _job_progress(ingesting: Any, batch: str) -> Iterator[Callable[[], None]]:
    """A progress bar fed by the batch's jobs, as the job event streams are: it counts work
    done by any worker, this process's or a server's."""
    from citewell.services.jobs import FINAL, ProgressTracker

    chunks: dict[str, int] = {}  # job id → chunks of its indexed file
    tracker = ProgressTracker()
    with _progress_bar() as bar:
        task = bar.add_task("Ingesting", total=None, chunks=0, rate="0.0")

        def watch() -> None:
            while True:
                state = ingesting.batch(batch, chunks)
                counts = state.counts
                chunks.update(state.chunks)
                finished = sum(n for state, n in counts.items() if state in FINAL)
                progress = tracker.update(finished, sum(counts.values()))
                elapsed = bar.tasks[0].elapsed or 1e-9
                total_chunks = sum(chunks.values())
                rate = f"{total_chunks / elapsed:.1f}"
                bar.update(
                    task,
                    total=progress.total,
                    completed=progress.finished,
                    chunks=total_chunks,
                    rate=rate,
                )
                if progress.finished == progress.total:
                    return
                time.sleep(0.25)

        yield watch
