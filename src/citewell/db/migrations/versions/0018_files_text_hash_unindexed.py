"""Files' text hashes are no longer indexed: nothing looks a file up by its text's hash,
and each file's insert wrote the index at a random page, which past a million files cost
an import's catalog about a fifth of its time (docs/benchmarks/journal.md, "A second import
into ten million, and the catalog's keys").

Revision ID: 0018
Revises: 0017
Created: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())  # checked first, as 0013 and 0016 do
    if "ix_files_text_sha256" in {i["name"] for i in inspector.get_indexes("files")}:
        op.drop_index("ix_files_text_sha256", table_name="files")


def downgrade() -> None:
    op.create_index("ix_files_text_sha256", "files", ["text_sha256"], unique=False)
