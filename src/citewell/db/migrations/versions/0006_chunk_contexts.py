"""Contexts and summaries the LLM wrote for contextual retrieval (contextual_chunks,
document_summary), kept so that the same text never costs a second LLM call.

Revision ID: 0006
Revises: 0005
Created: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chunk_contexts",
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("doc_hash", sa.String(length=64), nullable=False),
        sa.Column("chunk_hash", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_index("ix_chunk_contexts_doc_chunk", "chunk_contexts", ["doc_hash", "chunk_hash"])


def downgrade() -> None:
    op.drop_index("ix_chunk_contexts_doc_chunk", table_name="chunk_contexts")
    op.drop_table("chunk_contexts")
