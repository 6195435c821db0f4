"""Jobs lost with a worker that ran others beside them are claimed alone afterwards, so a
file that kills its worker is found without blaming the files that happened to share its
batch.

Revision ID: 0017
Revises: 0016
Created: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())  # checked first, as 0013 and 0016 do
    if "run_alone" not in {c["name"] for c in inspector.get_columns("jobs")}:
        with op.batch_alter_table("jobs") as batch:
            batch.add_column(
                sa.Column("run_alone", sa.Boolean(), server_default=sa.false(), nullable=False)
            )
    if "ix_jobs_alone" not in {i["name"] for i in inspector.get_indexes("jobs")}:
        op.create_index(  # partial: a claim of shared jobs must not scan the queue through it
            "ix_jobs_alone",
            "jobs",
            ["state", "created_at"],
            sqlite_where=sa.text("run_alone = 1"),
            postgresql_where=sa.text("run_alone"),
        )


def downgrade() -> None:
    op.drop_index("ix_jobs_alone", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("run_alone")
