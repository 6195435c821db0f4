"""`citewell serve`, `worker`, `migrate`, `files copy` and `check`: running the server and
keeping its data sound."""

from __future__ import annotations

import contextlib
import json
import logging.config
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import click

from citewell.cli.common import Context, click_errors, pass_app


@click.command()
@click.option("--host", default=None, help="Address to bind [default: host setting, 127.0.0.1].")
@click.option("--port", type=int, default=None, help="Port [default: port setting, 8080].")
@click.option(
    "--workers", type=int, default=None, help="API processes on the port [default: workers, 1]."
)
@pass_app
def serve(ctx: Context, host: str | None, port: int | None, workers: int | None) -> None:
    """Run the HTTP server: OpenAI-compatible /v1, Open WebUI's /api/v1/rag, docs at /docs.

    Calls need an API key (the first start prints the admin's) unless auth=none."""
    import uvicorn

    from citewell.api.app import create_app
    from citewell.api.security import check_auth_mode
    from citewell.cli.auth import announce_access
    from citewell.config import Settings
    from citewell.tracing.logs import log_config

    with click_errors():
        settings = Settings.load(ctx.config, data_dir=ctx.data_dir, workers=workers)
        logs = log_config(settings.server.log_level, settings.server.log_format)
        logging.config.dictConfig(logs)  # before the models load: their lines too
        bind, listen = host or settings.server.host, port or settings.server.port
        check_auth_mode(settings, bind)  # before loading models: a refusal is immediate
        if settings.server.workers == 1:
            app = ctx.app(switch_models=True)
            users, api = app.accounts.users, create_app(settings, app)
        else:
            from citewell.app.database import prepare_database

            users = prepare_database(settings).users  # once, before the processes start
    llm = settings.llm.llm_base_url or "none (extractive answers)"
    click.echo(
        f"Citewell on http://{bind}:{listen}  data: {settings.storage.data_dir}  LLM: {llm}"
        + (f"  processes: {settings.server.workers}" if settings.server.workers > 1 else ""),
        err=True,
    )
    announce_access(settings, users)
    # SIGTERM: stop accepting, finish requests in flight (up to 30 s), then stop the job
    # worker (its batch finishes or goes back to the queue).
    if settings.server.workers == 1:
        uvicorn.run(
            api,
            host=bind,
            port=listen,
            log_config=logs,
            proxy_headers=False,  # the app reads them itself (api/peer.py)
            timeout_graceful_shutdown=30,
            timeout_keep_alive=settings.server.keep_alive_seconds,
        )
        return
    # Each process builds its own app from the environment (uvicorn's factory).
    os.environ["CITEWELL_DATA_DIR"] = str(settings.storage.data_dir)
    os.environ["CITEWELL_WORKERS"] = str(settings.server.workers)
    if ctx.config is not None:
        os.environ["CITEWELL_CONFIG"] = str(ctx.config)
    with shared_metrics():
        uvicorn.run(
            "citewell.api.app:app_from_environment",
            factory=True,
            host=bind,
            port=listen,
            workers=settings.server.workers,
            log_config=logs,
            proxy_headers=False,  # the app reads them itself (api/peer.py)
            timeout_graceful_shutdown=30,
            timeout_keep_alive=settings.server.keep_alive_seconds,
        )


@contextlib.contextmanager
def shared_metrics() -> Iterator[None]:
    """A directory where the API processes keep their counters (prometheus_client's
    multiprocess mode), so a scrape of any of them reports all; gone when they stop."""
    from citewell.metrics.exposition import MULTIPROCESS_ENV

    if os.environ.get(MULTIPROCESS_ENV):  # the operator chose one
        yield
        return
    folder = tempfile.mkdtemp(prefix="citewell-metrics-")
    os.environ[MULTIPROCESS_ENV] = folder  # read by each process as it starts
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@click.command()
@click.option("--to", "target", default="", help="postgresql://user:password@host/database")
@click.option(
    "--files-to",
    default="",
    help="Also copy the stored files: s3://BUCKET/PREFIX (with the file_store_* endpoint, "
    "region and keys) or a directory.",
)
@click.option("--force", is_flag=True, help="Empty a target database that holds data first.")
@pass_app
def migrate(ctx: Context, target: str, files_to: str, force: bool) -> None:
    """Move this embedded data dir into PostgreSQL: catalog, users, keys, grants, jobs, the
    embedding cache and every chunk with its vector (nothing is embedded again); with
    --files-to, its stored files into a bucket too.

    Stop the server first."""
    from citewell.config import Settings
    from citewell.operations.move import Move

    if not target and not files_to:
        raise click.UsageError("Say where to: --to postgresql://… and/or --files-to s3://….")
    with click_errors():
        settings = Settings.load(ctx.config, data_dir=ctx.data_dir)
        report = None
        if target:
            report = Move(settings, target, lambda line: click.echo(line, err=True)).run(force)
        settings_to_add = _copy_files(settings, "", files_to) if files_to else {}
    if report is not None:
        click.echo(
            f"Moved {sum(report.tables.values())} rows, {sum(report.chunks.values())} chunks "
            f"and {report.cached_vectors} cached vectors; {report.searches_checked} sample "
            "searches compared."
        )
        if not report.ok:
            raise click.ClickException("The copy differs: " + "; ".join(report.mismatches))
        settings_to_add = {"CITEWELL_DATABASE_URL": target, **settings_to_add}
    lines = "".join(f"    {name}={value}\n" for name, value in settings_to_add.items())
    click.echo(f"Done. Start Citewell with the same data dir and\n\n{lines}")


def _copy_files(settings: Any, source: str, target: str) -> dict[str, str]:
    """Copy stored files; the settings that make the target the file store."""
    from citewell.operations.copy_files import copy_files, settings_for

    report = copy_files(settings, source, target, lambda line: click.echo(line, err=True))
    click.echo(
        f"Copied {report.copied} stored blobs ({report.bytes_copied / 1e6:.1f} MB) from "
        f"{report.source} to {report.target}; {report.unchanged} were there already."
    )
    if not report.ok:
        shown = ", ".join(report.missing[:10])
        raise click.ClickException(
            f"{len(report.missing)} blobs did not arrive ({shown}); run the copy again."
        )
    return settings_for(target)


@click.command()
@click.option(
    "--key-env",
    default="CITEWELL_API_KEY",
    show_default=True,
    help="The environment variable holding the API key the tools answer for.",
)
@pass_app
def mcp(ctx: Context, key_env: str) -> None:
    """Serve the MCP tools over stdio (for Claude Desktop, Cursor, VS Code and other clients
    that start a process). The HTTP server serves the same at /mcp."""
    from citewell.mcp_server.stdio import serve_stdio
    from citewell.tracing.logs import set_up_logging

    with click_errors():
        app = ctx.app()
        set_up_logging(app.settings.server.log_level, app.settings.server.log_format)
        app.warm()  # a long-running server: its first call should not wait
        serve_stdio(app, os.environ.get(key_env, ""))


@click.group()
def files() -> None:
    """The stored files: originals, extracted texts, page maps, staged and held uploads."""


@files.command(name="copy")
@click.option(
    "--to",
    "target",
    default="",
    help="A directory or s3://BUCKET/PREFIX [default: the file store in use].",
)
@click.option(
    "--from",
    "source",
    default="",
    help="A directory or s3://BUCKET/PREFIX [default: the file store in use].",
)
@pass_app
def files_copy(ctx: Context, target: str, source: str) -> None:
    """Copy every stored file from one file store to another: into a bucket before setting
    file_store = s3, out of it as a backup, or a backup back. Blobs the target already
    holds with the same size are skipped, so an interrupted copy is simply run again."""
    from citewell.config import Settings

    if not target and not source:
        raise click.UsageError("Name --to (a backup) or --from (a restore), or both.")
    with click_errors():
        settings = Settings.load(ctx.config, data_dir=ctx.data_dir)
        to_add = _copy_files(settings, source, target)
    if to_add:
        lines = "".join(f"    {name}={value}\n" for name, value in to_add.items())
        click.echo(f"To keep stored files there from now on, set\n\n{lines}")


@click.command()
@pass_app
def worker(ctx: Context) -> None:
    """Run queued ingest jobs until stopped (Ctrl-C or SIGTERM).

    For running ingestion outside the server; set serve_job_worker=false on the server then."""
    import signal
    import threading

    from citewell.tracing.logs import set_up_logging

    with click_errors():
        app = ctx.app(switch_models=True)
    set_up_logging(app.settings.server.log_level, app.settings.server.log_format)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    app.start_workers()
    click.echo(f"Citewell worker on {app.settings.storage.data_dir}: Ctrl-C stops it.", err=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        app.close()


@click.command()
@click.option("--repair", is_flag=True, help="Fix what is found (see the user guide).")
@click.option(
    "--recall-samples",
    default=20,
    show_default=True,
    help="Queries used to measure the vector index's recall against exact search (0: skip).",
)
@click.option("--json", "as_json", is_flag=True)
@pass_app
def check(ctx: Context, repair: bool, recall_samples: int, as_json: bool) -> None:
    """Compare the metadata database, the chunk store and the stored files, and report the
    chunk indexes (with the vector index's measured recall).

    Exits 1 when differences remain (run again with --repair to fix them)."""
    with click_errors():
        report = ctx.app().check(repair, recall_samples)
    if as_json:
        click.echo(json.dumps({**asdict(report), "problems": report.problems}, indent=2))
    else:
        _print_check(report)
        _table_copy_hint(ctx.app())
        _replica_line(ctx.app())
    if report.problems and not repair:
        raise SystemExit(1)


def _print_check(report: Any) -> None:
    for file_id, count in report.orphan_chunks.items():
        click.echo(f"orphan chunks: {count} of unknown file {file_id}")
    for file_id, (recorded, found) in report.missing_chunks.items():
        click.echo(f"missing chunks: file {file_id} has {found} of its {recorded}")
    for file_id in report.orphan_stored:
        click.echo(f"orphan stored file: {file_id}")
    for file_id, kinds in report.missing_stored.items():
        hint = (
            " (put the file store back from a backup, or upload the file again)"
            if "original" in kinds
            else " (--repair makes it again from the original)"
        )
        click.echo(f"missing stored {' and '.join(kinds)}: file {file_id}{hint}")
    for file_id in report.files_in_no_kb:
        click.echo(f"file in no knowledge base: {file_id}")
    for job_id in report.stuck_jobs:
        click.echo(f"stuck job: {job_id} (running far longer than any step may take)")
    for job_id in report.orphan_staged:
        click.echo(f"staged upload of a finished or unknown job: {job_id}")
    if report.index is not None:
        click.echo(_index_line(report.index))
    if report.low_recall:
        click.echo("low recall: the vector index misses too many neighbours (--repair retrains)")
    if report.indexes_behind:
        click.echo(
            f"indexes behind: {report.index.rows_behind:,} rows are outside the indexes that "
            "should hold them, so searches scan them one by one (writes still under way, or "
            "a write or import stopped before it built its indexes; --repair builds them)"
        )
    for line in report.repairs:
        click.echo(f"repaired: {line}")
    if not report.problems:
        click.echo("Consistent: the catalog, the chunk store and the stored files agree.")


def _table_copy_hint(app: Any) -> None:
    """A table past the ANN threshold: what its copy in memory takes, and when there is not
    the memory for it, what it would take."""
    from citewell.services.stats import table_copy_memory

    memory = table_copy_memory(app)
    if memory is None:
        return
    held = "one copy for the machine's API processes" if memory.shared else "in each API process"
    click.echo(
        f"in-memory copy: about {math.ceil(memory.needed_mb):,} MB for {memory.rows:,} chunks "
        f"({math.ceil(memory.per_million_mb):,} MB a million), {held}; table_copy_mb allows "
        f"{memory.budget_mb:,}"
    )
    if memory.budget_mb < memory.needed_mb:
        auto = " ('auto' on this machine)" if app.settings.storage.table_copy_mb == "auto" else ""
        where = "the machine has" if memory.shared else "each API process has"
        click.echo(
            f"searches read LanceDB's indexes: table_copy_mb{auto} is too small; "
            f"table_copy_mb = {math.ceil(memory.needed_mb * 1.1)}, where {where} that memory "
            "to spare, would let it search a copy, about 2-3x faster at a million chunks "
            "(docs/user-guide.md, 'A whole big table in memory')"
        )


def _replica_line(app: Any) -> None:
    """Where the streaming replica (database_read_url) stands, when one is set."""
    from citewell.services.stats import replica_state

    state = replica_state(app)
    if state is None:
        return
    if state.replica_version is None:
        click.echo(
            "replica (database_read_url): does not answer; copies are read from the primary "
            "(check the replica's address and that it is running as a hot standby)"
        )
        return
    behind = state.primary_version - state.replica_version
    lag = "caught up" if behind <= 0 else f"{behind:,} write(s) behind"
    click.echo(
        f"replica (database_read_url): answering, at version {state.replica_version:,} of "
        f"the chunk table ({lag})"
    )


def _index_line(health: Any) -> str:
    line = f"chunks: {health.rows:,}, vector search: {health.vector_index}"
    if health.trained_rows:
        line += (
            f" trained on {health.trained_rows:,} rows in {health.partitions} partition(s),"
            f" {health.unindexed_rows:,} rows not yet indexed"
        )
    if health.training_rows:
        line += f", being trained anew on {health.training_rows:,} rows in the background"
    if health.recall_at_50 is not None:
        line += f", recall@50 {health.recall_at_50:.3f} ({health.recall_samples} queries)"
    return line
