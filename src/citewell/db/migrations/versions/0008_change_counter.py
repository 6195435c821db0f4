"""A change counter that SQLite triggers raise on every write to the tables a request reads,
so processes can keep what they read from them until something changes (db/changes.py).

Revision ID: 0008
Revises: 0007
Created: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from citewell.db.changes import create_triggers, drop_triggers

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "change_counter",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.execute("INSERT INTO change_counter (id, n) VALUES (1, 0)")
    create_triggers(op.get_bind())


def downgrade() -> None:
    drop_triggers(op.get_bind())
    op.drop_table("change_counter")
