"""`citewell user …` and `citewell key …`: accounts and API keys, straight on the metadata
database (no model is loaded)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from citewell.errors import CitewellError

if TYPE_CHECKING:  # imported when a command runs: `citewell --help` imports this module
    from citewell.app.database import AccountDatabase
    from citewell.auth import AuthStore
    from citewell.config import Settings
    from citewell.services.accounts import AccountService


def _settings() -> Settings:
    from citewell.config import Settings

    root = click.get_current_context().find_root()
    return Settings.load(root.params.get("config"), data_dir=root.params.get("data_dir"))


def _database() -> AccountDatabase:
    from citewell.app.database import account_database

    return account_database(_settings())


def _accounts() -> AccountService:
    """As the local operator: an admin, recorded as 'local' in the audit trail."""
    from citewell.services.local import local_accounts

    return local_accounts(_database())


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except CitewellError as exc:
        raise click.ClickException(exc.message) from exc


def announce_access(settings: Settings, users: AuthStore) -> None:
    """What `citewell serve` says about access at start. The first start with auth on makes
    the admin account and prints its key once (on the terminal, never in a log file)."""
    if settings.access.auth == "none":
        click.secho(
            "WARNING: auth=none - anyone who reaches this address is the admin (loopback only).",
            fg="yellow",
            err=True,
        )
        return
    if users.admin_count() > 0:
        return
    try:
        admin = users.create_user("admin", role="admin")
    except CitewellError:
        # Several servers starting at once on one database: the name is unique, so exactly
        # one made the admin (and printed its key); or a non-admin user is called 'admin'.
        if users.admin_count() > 0:
            click.echo(
                "The admin account was made by another server starting at the same "
                "time; its key was printed there.",
                err=True,
            )
        else:
            click.echo("No admin yet: make one with `citewell user create NAME --admin`.", err=True)
        return
    _, plain = users.create_key(admin.id, "first start")
    click.echo(
        "\nFirst start: made the admin account 'admin' and this API key (shown once, not "
        f"stored):\n\n    {plain}\n\nUse it as the openai SDK's api_key or as 'Authorization: "
        "Bearer …'. Make more with `citewell key create --user NAME`.\n",
        err=True,
    )


def _password(from_stdin: bool) -> str:
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    value: str = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    return value


@click.group()
def user() -> None:
    """Create and list users, set passwords (admins manage users, keys and every KB)."""


@user.command(name="create")
@click.argument("name")
@click.option("--admin", is_flag=True, help="Make an administrator.")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@click.option("--no-password", is_flag=True, help="No password: the user signs in with keys.")
def user_create(name: str, admin: bool, password_stdin: bool, no_password: bool) -> None:
    password = "" if no_password else _password(password_stdin)
    with _errors():
        created = _accounts().create_user(name, password, "admin" if admin else "user")
    click.echo(f"Created {created.role} {created.name} ({created.id}).")


@user.command(name="password")
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
def user_password(name: str, password_stdin: bool) -> None:
    """Set a user's password (to sign in on the web page), even while the server runs."""
    password = _password(password_stdin)
    with _errors():
        changed = _accounts().update_user(name, None, None, password)
    click.echo(f"Set the password of {changed.name}; sign in at / with it.")


@user.command(name="list")
@click.option("--json", "as_json", is_flag=True)
def user_list(as_json: bool) -> None:
    users = _accounts().list_users()
    if as_json:
        click.echo(json.dumps([asdict(u) for u in users], indent=2))
        return
    for u in users:
        click.echo(f"{u.name}\t{u.role}\t{u.id}" + ("\tdisabled" if u.disabled else ""))
    if not users:
        click.echo("No users yet: 'citewell user create NAME --admin' makes the first admin.")


@click.group()
def key() -> None:
    """Create, list and revoke API keys (the `openai` SDK's api_key)."""


@key.command(name="create")
@click.option("--user", "owner", required=True, help="The user the key acts as.")
@click.option("--name", default="", help="A label, e.g. the machine that uses it.")
@click.option("--kb", "kbs", multiple=True, help="Limit the key to this KB (repeatable).")
@click.option("--read-only", is_flag=True, help="The key may search and chat, not change.")
def key_create(owner: str, name: str, kbs: tuple[str, ...], read_only: bool) -> None:
    """Print a new key once; only its hash is kept."""
    from citewell.services.local import kb_of, local_accounts

    with _errors():
        database = _database()
        kb_ids = [kb_of(database, k).id for k in kbs]
        record, plain = local_accounts(database).create_key_for(owner, name, kb_ids, read_only)
    click.echo(plain)
    click.echo(f"Key {record.id} ({record.prefix}…) for {owner}: shown once, keep it.", err=True)


@key.command(name="list")
@click.option("--user", "owner", default=None, help="Only this user's keys.")
@click.option("--json", "as_json", is_flag=True)
def key_list(owner: str | None, as_json: bool) -> None:
    with _errors():
        keys = _accounts().keys(owner)
    if as_json:
        click.echo(json.dumps([asdict(k) for k in keys], indent=2))
        return
    for k in keys:
        scope = ",".join(k.kb_ids) or "all KBs"
        state = "revoked" if k.revoked else ("read-only" if k.read_only else "read-write")
        click.echo(f"{k.id}\t{k.prefix}…\t{k.name}\t{scope}\t{state}")


@key.command(name="revoke")
@click.argument("key_id")
def key_revoke(key_id: str) -> None:
    with _errors():
        revoked = _accounts().revoke_key(key_id)
    click.echo(f"Revoked {revoked.id} ({revoked.prefix}…).")


@click.command()
@click.argument("kb")
@click.argument("principal")
@click.option("--write", is_flag=True, help="Also add and remove files (default: read).")
@click.option("--revoke", is_flag=True, help="Take the grant back instead.")
def share(kb: str, principal: str, write: bool, revoke: bool) -> None:
    """Let PRINCIPAL ('user:NAME', 'group:NAME' or 'public') read (or --write) KB.

    KBs made from the command line have no owner, so only admins see them until shared."""
    from citewell.services.local import kb_of, local_kb_sharing

    with _errors():
        database = _database()
        target, sharing = kb_of(database, kb), local_kb_sharing(database)
        if revoke:
            sharing.unshare(target.id, principal)
            click.echo(f"{principal} no longer has access to {target.name}.")
            return
        _, grant = sharing.share(target.id, principal, "write" if write else "read")
    click.echo(f"{grant.principal} may now {grant.permission} {target.name}.")


@click.group()
def group() -> None:
    """Groups of users, to share knowledge bases with many at once."""


@group.command(name="create")
@click.argument("name")
def group_create(name: str) -> None:
    with _errors():
        made = _accounts().create_group(name)
    click.echo(f"Created group {made.name} ({made.id}).")


@group.command(name="add")
@click.argument("name")
@click.argument("users", nargs=-1, required=True)
def group_add(name: str, users: tuple[str, ...]) -> None:
    """Add USERS to the group NAME."""
    with _errors():
        accounts = _accounts()
        for member in users:
            updated = accounts.add_member(name, member)
    click.echo(f"{updated.name}: {', '.join(updated.members)}")


@group.command(name="list")
def group_list() -> None:
    with _errors():
        groups = _accounts().list_groups()
    for g in groups:
        click.echo(f"{g.name}\t{g.id}\t{', '.join(g.members)}")


@click.group()
def identity() -> None:
    """Sign-in through the company's identity provider (LDAP, OpenID Connect, a proxy)."""


@identity.command(name="sync")
def identity_sync() -> None:
    """Look every LDAP user up in the directory again now: those gone (or filtered out) are
    disabled, which stops their API keys; the others' groups and role follow the directory.
    The server does this every ldap_sync_minutes by itself."""
    from citewell.app.database import account_database
    from citewell.auth.identity.methods import identity_methods
    from citewell.auth.identity.sync import sync_directory

    settings = _settings()
    if not settings.identity.ldap_url:
        raise click.ClickException("No directory is set up (ldap_url); nothing to check.")
    with _errors():
        accounts = account_database(settings).accounts
        methods = identity_methods(settings.identity, settings.server.public_url, accounts.users)
        report = sync_directory(methods, accounts.users, accounts.audit)
    click.echo(
        f"Checked {report.checked} directory users; disabled: "
        f"{', '.join(report.disabled) or 'none'}; groups or role changed: "
        f"{', '.join(report.changed) or 'none'}."
    )
