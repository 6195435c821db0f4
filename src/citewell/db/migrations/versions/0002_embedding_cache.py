"""The embedding cache as a table of the database (used when that is PostgreSQL).

Revision ID: 0002
Revises: 0001
Created: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embedding_cache",
        sa.Column("model", sa.String(length=500), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("model", "hash"),
    )


def downgrade() -> None:
    op.drop_table("embedding_cache")
