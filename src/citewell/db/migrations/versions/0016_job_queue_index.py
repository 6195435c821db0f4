"""The job queue's index (issue 68): a claim walks queued jobs user by user, oldest first
(jobs/picking.py), through ``ix_jobs_queue`` (state, added_by, created_at) instead of
ranking the whole queue each time.

Revision ID: 0016
Revises: 0015
Created: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    indexes = {i["name"] for i in sa.inspect(op.get_bind()).get_indexes("jobs")}
    if "ix_jobs_queue" not in indexes:  # checked first, as 0013 does
        op.create_index("ix_jobs_queue", "jobs", ["state", "added_by", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_jobs_queue", table_name="jobs")
