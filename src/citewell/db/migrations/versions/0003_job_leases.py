"""Job leases (a running job belongs to its worker until its lease passes, and who holds
it), and the rate-limit buckets several processes share.

Revision ID: 0003
Revises: 0002
Created: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Jobs left running by an older release have lease 0: already passed, so queued again.
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("lease_until", sa.Float(), server_default="0", nullable=False))
        batch.add_column(
            sa.Column("holder", sa.String(length=300), server_default="", nullable=False)
        )

    op.create_table(
        "rate_buckets",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("last", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )


def downgrade() -> None:
    op.drop_table("rate_buckets")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("holder")
        batch.drop_column("lease_until")
