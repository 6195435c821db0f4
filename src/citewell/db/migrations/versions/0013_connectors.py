"""Connectors: a source (a folder on the server, a git repository, ...) bound to a KB and
kept in sync (issue 47). Each link records the connector that brought it (``connector_id``,
"" for files added by hand) and the source's version of the item (``version``: a folder's
size and modification time, a git blob id), so a sync reads only what changed.

Revision ID: 0013
Revises: 0012
Created: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Each step checks first: a database whose recorded revision was set back (a copy made
    # by an earlier `citewell migrate`) runs the steps again over what is already there.
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table("connectors"):
        _create_connectors()
    columns = {c["name"] for c in inspector.get_columns("knowledge_base_files")}
    for name, width in (("connector_id", 32), ("version", 200)):
        if name not in columns:
            op.add_column(
                "knowledge_base_files",
                sa.Column(name, sa.String(width), nullable=False, server_default=""),
            )


def _create_connectors() -> None:
    op.create_table(
        "connectors",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "kb_id",
            sa.String(32),
            sa.ForeignKey("knowledge_bases.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("kind", sa.String(30), nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("target", sa.Text(), nullable=False),
        sa.Column("options", sa.Text(), nullable=False, server_default="{}"),
        sa.Column("secret", sa.Text(), nullable=False, server_default=""),
        sa.Column("interval", sa.Float(), nullable=False, server_default="3600"),
        sa.Column("paused", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_by", sa.String(32), nullable=False, server_default=""),
        sa.Column("local", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("next_run_at", sa.Float(), nullable=False, server_default="0", index=True),
        sa.Column("status", sa.Text(), nullable=False, server_default="{}"),
        sa.Column("cursor", sa.Text(), nullable=False, server_default=""),
        sa.UniqueConstraint("kb_id", "name", name="uq_connector_kb_name"),
    )


def downgrade() -> None:
    with op.batch_alter_table("knowledge_base_files") as batch:
        batch.drop_column("version")
        batch.drop_column("connector_id")
    op.drop_table("connectors")
