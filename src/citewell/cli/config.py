"""`citewell config …`: the effective settings, the reference, and run-time changes made from
the command line (as admins make them over /api/v1/retrieval/config), straight on the
metadata database: no model is loaded, and running servers pick a change up within 2 s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from citewell.errors import CitewellError

if TYPE_CHECKING:  # imported when a command runs: `citewell --help` imports this module
    from citewell.services.settings import SettingsService


@contextmanager
def _settings() -> Iterator[SettingsService]:
    """The settings service on the data dir's database, as its operator (an admin)."""
    from citewell.app.assemble import live_settings_alone
    from citewell.auth.access import Access
    from citewell.config import Settings
    from citewell.services.settings import SettingsService

    root = click.get_current_context().find_root()
    try:
        start = Settings.load(root.params.get("config"), data_dir=root.params.get("data_dir"))
        live, audit = live_settings_alone(start)
        yield SettingsService(live, audit, Access.everything())
    except CitewellError as exc:
        raise click.ClickException(exc.message) from exc


def _value(text: str) -> Any:
    """JSON where it parses (numbers, true/false, lists), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


@click.group(invoke_without_command=True)
@click.option("--markdown", is_flag=True, help="Print the configuration reference.")
@click.pass_context
def config(ctx: click.Context, markdown: bool) -> None:
    """Show the effective settings: start-up values with run-time changes (or the reference
    with --markdown). `config set` and `config reset` change settings at run time."""
    if ctx.invoked_subcommand is not None:
        return
    if markdown:
        from citewell.config import configuration_markdown

        click.echo(configuration_markdown(), nl=False)
        return
    with _settings() as service:
        click.echo(json.dumps(service.effective(), indent=2))


@config.command(name="set")
@click.argument("pairs", nargs=-1, required=True, metavar="NAME=VALUE...")
def set_settings(pairs: tuple[str, ...]) -> None:
    """Change settings for every process on this data dir or database, and across restarts.
    Values are JSON where they parse (5, 0.2, true, ["\\n\\n", "."]), else text."""
    changes = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise click.UsageError(f"{pair!r} is not NAME=VALUE.")
        changes[name.strip()] = _value(value)
    with _settings() as service:
        changed = service.update(changes)
    click.echo(f"Changed: {', '.join(changed)}." if changed else "Nothing changed.")


@config.command(name="reset")
@click.argument("names", nargs=-1, metavar="[NAME]...")
def reset_settings(names: tuple[str, ...]) -> None:
    """Back to the start-up values (environment, config file, defaults): of NAMEs, or of
    every setting changed at run time."""
    with _settings() as service:
        service.reset(list(names) or None)
    click.echo("Back to the start-up values" + (f" for {', '.join(names)}." if names else "."))
