"""A knowledge base's own chunking: which chunk set its searches read (``chunk_label``),
the one a re-chunk is building (``pending_label``, with its job batch), and the one a
finished re-chunk replaced, kept until it is deleted (``retired_label``).

Revision ID: 0007
Revises: 0006
Created: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

COLUMNS = ("chunk_label", "pending_label", "retired_label", "rechunk_batch")


def upgrade() -> None:
    with op.batch_alter_table("knowledge_bases") as batch:
        for name in COLUMNS:
            batch.add_column(
                sa.Column(name, sa.String(length=48), server_default="", nullable=False)
            )


def downgrade() -> None:
    with op.batch_alter_table("knowledge_bases") as batch:
        for name in COLUMNS:
            batch.drop_column(name)
