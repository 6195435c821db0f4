"""Folders inside a KB and Open WebUI's knowledge API (issue 47): each path of a KB gets an
``entry_id`` of its own (Open WebUI names a KB's files by such ids; the same bytes at two
paths are one stored file but two entries); ``knowledge_folders`` holds a KB's folders by
path (empty ones too); ``uploads`` holds files uploaded on their own until they are added
to a KB.

Revision ID: 0014
Revises: 0013
Created: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Each step checks first, as 0013 does (a database set back to an earlier revision).
    inspector = sa.inspect(op.get_bind())
    columns = {c["name"] for c in inspector.get_columns("knowledge_base_files")}
    if "entry_id" not in columns:
        op.add_column(
            "knowledge_base_files",
            sa.Column("entry_id", sa.String(32), nullable=False, server_default=""),
        )
        _give_entry_ids()
        op.create_index("ix_knowledge_base_files_entry_id", "knowledge_base_files", ["entry_id"])
    if not inspector.has_table("knowledge_folders"):
        _create_folders()
    if not inspector.has_table("uploads"):
        _create_uploads()


def _give_entry_ids() -> None:
    """One random id per existing entry, in one statement (a KB may hold 100,000 paths)."""
    bind = op.get_bind()
    random_hex = (
        "md5(random()::text || clock_timestamp()::text)"
        if bind.dialect.name == "postgresql"
        else "lower(hex(randomblob(16)))"
    )
    bind.execute(sa.text(f"UPDATE knowledge_base_files SET entry_id = {random_hex}"))


def _create_folders() -> None:
    op.create_table(
        "knowledge_folders",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "kb_id",
            sa.String(32),
            sa.ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("path", sa.String(1000), nullable=False),
        sa.Column("created_by", sa.String(32), nullable=False, server_default=""),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("kb_id", "path", name="uq_knowledge_folder_path"),
    )


def _create_uploads() -> None:
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), nullable=False, index=True),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("content_type", sa.String(200), nullable=False, server_default=""),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("meta", sa.Text(), nullable=False, server_default="{}"),
        sa.Column("file_id", sa.String(32), nullable=False, server_default=""),
        sa.Column("created_at", sa.Float(), nullable=False, index=True),
    )


def downgrade() -> None:
    op.drop_table("uploads")
    op.drop_table("knowledge_folders")
    with op.batch_alter_table("knowledge_base_files") as batch:
        batch.drop_index("ix_knowledge_base_files_entry_id")
        batch.drop_column("entry_id")
