"""The database alone, built by the root for commands that load no model (``citewell
user``, ``key``, ``share``, ``kb list``) and before several server processes start."""

from __future__ import annotations

from dataclasses import dataclass

from citewell.auth.accounts import Accounts
from citewell.catalog import Catalog
from citewell.config import Settings
from citewell.db import ensure_schema, open_engine
from citewell.db.schema import ensure_vector_extension
from citewell.stores.registry import store_backend


def prepare_database(settings: Settings) -> Accounts:
    """The database of these settings, brought to the current schema, with what the chunk
    store needs in it (pgvector, when chunks live in PostgreSQL), and its account stores.
    Run once before several server processes start, so that a refusal is one message, not
    one per process."""
    engine = open_engine(settings)
    ensure_schema(engine)
    if store_backend(settings) == "postgres":
        ensure_vector_extension(engine)
    return Accounts.on(engine)


@dataclass(frozen=True)
class AccountDatabase:
    """The database alone: account stores, catalog, and the settings they were opened with."""

    accounts: Accounts
    catalog: Catalog
    settings: Settings


def account_database(settings: Settings) -> AccountDatabase:
    """Users, keys, grants, the audit trail and the catalog, for commands that work on the
    database alone (``citewell user``, ``key``, ``share``, ``kb list``): no model loaded."""
    engine = open_engine(settings)
    return AccountDatabase(Accounts.on(engine), Catalog(engine), settings)
