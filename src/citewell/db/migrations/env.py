"""Alembic's entry point: migrations run on the connection that ``ensure_schema`` passes in
(there is no alembic.ini; Citewell migrates its own database on start-up)."""

from alembic import context

from citewell.db.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=True,  # SQLite alters a table by rebuilding it
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
