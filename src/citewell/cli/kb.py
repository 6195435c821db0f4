"""`citewell kb …`: create, list and delete knowledge bases."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from citewell.cli.common import Context, click_errors, pass_app


@click.group()
def kb() -> None:
    """Create, list and delete knowledge bases."""


@kb.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def kb_list(ctx: Context, as_json: bool) -> None:
    from citewell.services.local import local_kbs

    kbs = local_kbs(ctx.database())  # the database alone: no model is loaded
    if as_json:
        click.echo(json.dumps([asdict(k) for k in kbs], indent=2))
        return
    for k in kbs:
        click.echo(f"{k.name}\t{k.file_count} files\t{k.id}")
    if not kbs:
        click.echo("No knowledge bases yet: 'citewell ingest PATH --kb NAME' makes one.")


@kb.command(name="create")
@click.argument("name")
@click.option("--description", default="")
@pass_app
def kb_create(ctx: Context, name: str, description: str) -> None:
    with click_errors():
        created = ctx.knowledge().create(name, description)
    click.echo(f"Created {created.name} ({created.id}).")


@kb.command(name="delete")
@click.argument("name")
@pass_app
def kb_delete(ctx: Context, name: str) -> None:
    """Delete a knowledge base and every chunk no other knowledge base uses."""
    with click_errors():
        ctx.knowledge().delete(name)
    click.echo(f"Deleted {name}.")
