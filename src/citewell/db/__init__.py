"""The relational database behind the catalog, jobs, users and grants: one engine factory,
one metadata (``catalog.models.Base``), and Alembic migrations that bring any data dir to the
current schema."""

from citewell.db.engine import open_engine, sqlite_engine
from citewell.db.schema import ensure_schema

__all__ = ["ensure_schema", "open_engine", "sqlite_engine"]
