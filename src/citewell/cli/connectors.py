"""`citewell sync` and `citewell connector …`: keep a knowledge base in sync with a folder or
a git repository, once, continuously (``--watch``), or on the server's schedule."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from citewell.cli.common import Context, click_errors, pass_app

OPTION_NAMES = (
    "folder",
    "branch",
    "include",
    "exclude",
    "allow_empty",
    "endpoint",
    "region",
    "depth",
    "max_pages",
)


def _service(ctx: Context) -> Any:
    from citewell.services.connectors import ConnectorService

    return ConnectorService(ctx.view(), local=True)


def _options(**given: str | bool | None) -> dict[str, str]:
    options = {k: str(v) for k, v in given.items() if v not in (None, "", False)}
    if given.get("allow_empty"):
        options["allow_empty"] = "true"
    return options


def _echo_tally(tally: Any, name: str) -> None:
    click.echo(
        f"{name}: {tally.added} added, {tally.updated} updated, {tally.deleted} deleted, "
        f"{tally.unchanged} unchanged, {tally.failed} failed; "
        f"{tally.chunks_embedded} texts embedded."
    )
    for error in tally.errors:
        click.echo(f"  failed: {error}", err=True)


def _source_options(function: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--kind",
                default=None,
                help="A source kind that lists its entries (folder, git, webdav, s3, website, "
                "a plug-in's; `citewell connector kinds` lists them). Default: folder, s3 for "
                "s3://, else git.",
            ),
            click.option("--username", default="", help="git, webdav: the user to sign in as."),
            click.option(
                "--token-env",
                default="",
                metavar="VAR",
                help="Read the token or password from this environment variable.",
            ),
            click.option("--name", default="", help="The connector's name in the KB."),
            click.option("--folder", default="", help="Where its files go in the KB."),
            click.option("--branch", default="", help="git: the branch (default: HEAD's)."),
            click.option("--path", "sub_path", default="", help="git: only under this path."),
            click.option("--endpoint", default="", help="s3: the service's URL (not AWS)."),
            click.option("--region", default="", help="s3: the bucket's region."),
            click.option("--depth", default="", help="website: links to follow (2)."),
            click.option("--max-pages", default="", help="website: pages at most (200)."),
            click.option("--include", default="", help="Comma-separated globs to keep."),
            click.option("--exclude", default="", help="Comma-separated globs to skip."),
            click.option("--interval", type=float, default=0.0, help="Seconds between syncs."),
            click.option("--allow-empty", is_flag=True, help="An empty source deletes all."),
        ]
    ):
        function = option(function)
    return function


def _spec(  # noqa: PLR0913
    target: str,
    kind: str | None,
    name: str,
    interval: float,
    username: str,
    token_env: str,
    **options: Any,
) -> Any:
    from citewell.services.connectors import ConnectorSpec

    guessed = "s3" if target.startswith("s3://") else "git"
    chosen = kind or ("folder" if Path(target).expanduser().is_dir() else guessed)
    if chosen == "folder":
        target = str(Path(target).expanduser().resolve())
    credentials = {"username": username} if username else {}
    if token_env:
        if not os.environ.get(token_env):
            raise click.UsageError(f"--token-env {token_env}: that variable is not set.")
        credentials["token"] = os.environ[token_env]
    return ConnectorSpec(chosen, target, name, _options(**options), credentials, interval)


def _connector_for(service: Any, kb: str, spec: Any) -> Any:
    """The KB's connector of this kind and target, made if there is none."""
    service.check_kind(spec.kind)  # before the KB is made
    service.ensure_kb(kb)
    for found in service.of_kb(kb):
        if found.kind == spec.kind and found.target == spec.target:
            return found
    return service.create(kb, spec)


@click.command()
@click.argument("kb")
@click.argument("source")
@_source_options
@click.option("--watch", is_flag=True, help="Keep running: sync on every change.")
@pass_app
def sync(ctx: Context, /, kb: str, source: str, watch: bool, **given: Any) -> None:
    """Sync SOURCE (a folder or a git URL) into KB now: adds, changes, renames and deletes.
    The connector stays (see 'citewell connector list'); a server syncs it on schedule."""
    options = {k: given.pop(k) for k in OPTION_NAMES}
    options["path"] = given.pop("sub_path")
    with click_errors():
        service = _service(ctx)
        connector = _connector_for(service, kb, _spec(source, **given, **options))
        _echo_tally(service.sync_here(connector.id), connector.name)
    if watch:
        _watch(service, connector)


def _watch(service: Any, connector: Any) -> None:
    """Sync on changes (a folder: as the disk reports them; git: every interval) and fully
    every interval anyway: a watch can miss events."""
    import watchfiles

    stop = threading.Event()
    click.echo(f"Watching {connector.target}; Ctrl-C stops.", err=True)
    last = time.monotonic()
    try:
        if connector.kind != "folder":
            while not stop.wait(connector.interval):
                _rerun(service, connector)
            return
        for _ in watchfiles.watch(
            connector.target,
            stop_event=stop,
            rust_timeout=int(connector.interval * 1000),
            yield_on_timeout=True,
            debounce=400,
            step=50,
        ):
            _rerun(service, connector)
            last = time.monotonic()
    except KeyboardInterrupt:
        click.echo(f"Stopped watching (last sync {time.monotonic() - last:.0f} s ago).", err=True)


def _rerun(service: Any, connector: Any) -> None:
    with click_errors():
        _echo_tally(service.sync_here(connector.id), connector.name)


@click.group()
def connector() -> None:
    """Connectors: sources a knowledge base keeps in sync with."""


@connector.command(name="add")
@click.argument("kb")
@click.argument("target")
@_source_options
@pass_app
def connector_add(ctx: Context, /, kb: str, target: str, **given: Any) -> None:
    """Bind TARGET to KB; the server (or 'citewell connector run') syncs it."""
    options = {k: given.pop(k) for k in OPTION_NAMES}
    options["path"] = given.pop("sub_path")
    with click_errors():
        service = _service(ctx)
        service.ensure_kb(kb)
        made = service.create(kb, _spec(target, **given, **options))
    click.echo(f"Added connector {made.name} ({made.id}) to {kb}.")


@connector.command(name="list")
@click.option("--kb", default=None, help="Only this knowledge base's.")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def connector_list(ctx: Context, kb: str | None, as_json: bool) -> None:
    with click_errors():
        service = _service(ctx)
        found = service.of_kb(kb) if kb else service.all()
    if as_json:
        click.echo(json.dumps([asdict(c) for c in found], indent=2, default=str))
        return
    for c in found:
        paused = " (paused)" if c.paused else ""
        click.echo(f"{c.id}\t{c.kind}\t{c.name}\t{c.target}\t{c.status.state}{paused}")
    if not found:
        click.echo("No connectors yet: 'citewell sync KB FOLDER' makes one.")


@connector.command(name="kinds")
@pass_app
def connector_kinds(ctx: Context) -> None:
    """The source kinds a connector may have (plug-ins' included)."""
    for kind in _service(ctx).kinds():
        click.echo(kind)


@connector.command(name="run")
@click.argument("connector_id")
@pass_app
def connector_run(ctx: Context, connector_id: str) -> None:
    """Sync a connector now, in this process."""
    with click_errors():
        service = _service(ctx)
        found = service.by_id(connector_id)
        _echo_tally(service.sync_here(found.id), found.name)


@connector.command(name="status")
@click.argument("connector_id")
@pass_app
def connector_status(ctx: Context, connector_id: str) -> None:
    with click_errors():
        found = _service(ctx).by_id(connector_id)
    click.echo(json.dumps(asdict(found.status), indent=2))


@connector.command(name="remove")
@click.argument("connector_id")
@click.option("--delete-files", is_flag=True, help="Its files leave the KB too.")
@pass_app
def connector_remove(ctx: Context, connector_id: str, delete_files: bool) -> None:
    with click_errors():
        service = _service(ctx)
        found = service.by_id(connector_id)
        removed = service.delete(found.kb_id, found.id, delete_files)
    click.echo(f"Removed connector {found.name}; {removed} files left the KB.")
