"""Grants may name a principal that does not exist.

A user who is not an admin shares by name and must not learn from the answer whether a
user or group of that name exists (issue 45): a grant to an unknown name is kept, inert,
as 'name:user:NAME' (or 'name:group:NAME'), and listed like any other. Names are up to
200 characters, so the principal column grows from 40 to 300. (SQLite makes both tables
anew for that, which drops the change counter's triggers: made again.)

Revision ID: 0012
Revises: 0011
Created: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from citewell.db.changes import create_triggers

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TABLES = ("kb_grants", "model_preset_grants")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                "principal", existing_type=sa.String(40), type_=sa.String(300), nullable=False
            )
    create_triggers(op.get_bind())  # SQLite made the tables anew, without the counter's


def downgrade() -> None:
    for table in TABLES:
        op.execute(sa.text(f"DELETE FROM {table} WHERE principal LIKE 'name:%'"))
        with op.batch_alter_table(table) as batch:
            batch.alter_column(
                "principal", existing_type=sa.String(300), type_=sa.String(40), nullable=False
            )
    create_triggers(op.get_bind())
