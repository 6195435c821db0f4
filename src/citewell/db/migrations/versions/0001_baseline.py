"""The schema as of the first release with migrations (baseline).

A new database gets every table. A data dir made before migrations (it has tables but no
``alembic_version``) gets the tables it lacks and the columns that later releases added,
each with its default; the knowledge-base rebuild that SQLite needs outside a transaction ran
before this (``db.legacy``). Tables are defined here, not imported from the models, so this
revision means the same thing after the models change.

Revision ID: 0001
Revises:
Created: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

META = sa.MetaData()

sa.Table(
    "audit_events",
    META,
    sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
    sa.Column("at", sa.Float(), nullable=False),
    sa.Column("actor_id", sa.String(length=32), nullable=False),
    sa.Column("actor", sa.String(length=200), nullable=False),
    sa.Column("action", sa.String(length=50), nullable=False),
    sa.Column("target_type", sa.String(length=30), nullable=False),
    sa.Column("target_id", sa.String(length=64), nullable=False),
    sa.Column("detail", sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.Index("ix_audit_events_action", "action", unique=False),
    sa.Index("ix_audit_events_at", "at", unique=False),
)

sa.Table(
    "embedding_spaces",
    META,
    sa.Column("id", sa.String(length=64), nullable=False),
    sa.Column("model_id", sa.String(length=500), nullable=False),
    sa.Column("dimension", sa.Integer(), nullable=False),
    sa.Column("config", sa.Text(), nullable=False),
    sa.Column("state", sa.String(length=20), nullable=False),
    sa.Column("batch_id", sa.String(length=32), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("changed_at", sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.Index("ix_embedding_spaces_state", "state", unique=False),
)

sa.Table(
    "files",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("sha256", sa.String(length=64), nullable=False),
    sa.Column("text_sha256", sa.String(length=64), nullable=False),
    sa.Column("name", sa.String(length=500), nullable=False),
    sa.Column("mime_type", sa.String(length=100), nullable=False),
    sa.Column("size", sa.Integer(), nullable=False),
    sa.Column("chunk_count", sa.Integer(), nullable=False),
    sa.Column("status", sa.String(length=20), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("source", sa.String(length=20), server_default="upload", nullable=False),
    sa.Column("url", sa.Text(), server_default="", nullable=False),
    sa.Column("title", sa.Text(), server_default="", nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("sha256"),
    sa.Index("ix_files_text_sha256", "text_sha256", unique=False),
)

sa.Table(
    "groups",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("name", sa.String(length=200), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("name"),
)

sa.Table(
    "jobs",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("batch_id", sa.String(length=32), nullable=False),
    sa.Column("kb_id", sa.String(length=32), nullable=False),
    sa.Column("operation", sa.String(length=20), nullable=False),
    sa.Column("name", sa.String(length=500), nullable=False),
    sa.Column("key", sa.String(length=1000), nullable=False),
    sa.Column("state", sa.String(length=20), nullable=False),
    sa.Column("attempts", sa.Integer(), nullable=False),
    sa.Column("max_attempts", sa.Integer(), nullable=False),
    sa.Column("last_error", sa.Text(), nullable=False),
    sa.Column("error_code", sa.String(length=50), nullable=False),
    sa.Column("file_id", sa.String(length=32), nullable=False),
    sa.Column("claim", sa.String(length=32), nullable=False),
    sa.Column("not_before", sa.Float(), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("updated_at", sa.Float(), nullable=False),
    sa.Column("finished_at", sa.Float(), nullable=False),
    sa.Column("added_by", sa.String(length=32), server_default="", nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.Index("ix_jobs_batch_id", "batch_id", unique=False),
    sa.Index("ix_jobs_claim", "claim", unique=False),
    sa.Index("ix_jobs_kb_id", "kb_id", unique=False),
    sa.Index("ix_jobs_state", "state", unique=False),
)

sa.Table(
    "knowledge_bases",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("name", sa.String(length=200), nullable=False),
    sa.Column("description", sa.Text(), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("updated_at", sa.Float(), nullable=False),
    sa.Column("owner_id", sa.String(length=32), server_default="", nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("owner_id", "name", name="uq_kb_owner_name"),
    sa.Index("ix_knowledge_bases_name", "name", unique=False),
)

sa.Table(
    "model_presets",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("name", sa.String(length=200), nullable=False),
    sa.Column("owner_id", sa.String(length=32), nullable=False),
    sa.Column("config", sa.Text(), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("updated_at", sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("owner_id", "name", name="uq_preset_owner_name"),
    sa.Index("ix_model_presets_name", "name", unique=False),
)

sa.Table(
    "users",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("name", sa.String(length=200), nullable=False),
    sa.Column("role", sa.String(length=20), nullable=False),
    sa.Column("password_hash", sa.Text(), nullable=False),
    sa.Column("disabled", sa.Integer(), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("name"),
)

sa.Table(
    "api_keys",
    META,
    sa.Column("id", sa.String(length=32), nullable=False),
    sa.Column("user_id", sa.String(length=32), nullable=False),
    sa.Column("name", sa.String(length=200), nullable=False),
    sa.Column("prefix", sa.String(length=16), nullable=False),
    sa.Column("digest", sa.String(length=64), nullable=False),
    sa.Column("kb_ids", sa.Text(), nullable=False),
    sa.Column("read_only", sa.Integer(), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.Column("last_used_at", sa.Float(), nullable=False),
    sa.Column("revoked_at", sa.Float(), nullable=False),
    sa.Column("expires_at", sa.Float(), server_default="0", nullable=False),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("id"),
    sa.UniqueConstraint("digest"),
    sa.Index("ix_api_keys_user_id", "user_id", unique=False),
)

sa.Table(
    "group_members",
    META,
    sa.Column("group_id", sa.String(length=32), nullable=False),
    sa.Column("user_id", sa.String(length=32), nullable=False),
    sa.ForeignKeyConstraint(["group_id"], ["groups.id"], ondelete="CASCADE"),
    sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("group_id", "user_id"),
    sa.Index("ix_group_members_user_id", "user_id", unique=False),
)

sa.Table(
    "kb_grants",
    META,
    sa.Column("kb_id", sa.String(length=32), nullable=False),
    sa.Column("principal", sa.String(length=40), nullable=False),
    sa.Column("permission", sa.String(length=10), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(["kb_id"], ["knowledge_bases.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("kb_id", "principal"),
    sa.Index("ix_kb_grants_principal", "principal", unique=False),
)

sa.Table(
    "knowledge_base_files",
    META,
    sa.Column("kb_id", sa.String(length=32), nullable=False),
    sa.Column("path", sa.String(length=1000), nullable=False),
    sa.Column("file_id", sa.String(length=32), nullable=False),
    sa.Column("added_at", sa.Float(), nullable=False),
    sa.Column("name", sa.String(length=500), server_default="", nullable=False),
    sa.Column("added_by", sa.String(length=32), server_default="", nullable=False),
    sa.ForeignKeyConstraint(
        ["file_id"],
        ["files.id"],
    ),
    sa.ForeignKeyConstraint(["kb_id"], ["knowledge_bases.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("kb_id", "path"),
    sa.Index("ix_knowledge_base_files_file_id", "file_id", unique=False),
)

sa.Table(
    "model_preset_grants",
    META,
    sa.Column("preset_id", sa.String(length=32), nullable=False),
    sa.Column("principal", sa.String(length=40), nullable=False),
    sa.Column("permission", sa.String(length=10), nullable=False),
    sa.Column("created_at", sa.Float(), nullable=False),
    sa.ForeignKeyConstraint(["preset_id"], ["model_presets.id"], ondelete="CASCADE"),
    sa.PrimaryKeyConstraint("preset_id", "principal"),
    sa.Index("ix_model_preset_grants_principal", "principal", unique=False),
)


def upgrade() -> None:
    bind = op.get_bind()
    existing = set(sa.inspect(bind).get_table_names())
    for table in META.sorted_tables:
        if table.name not in existing:
            table.create(bind)
    for table in META.sorted_tables:
        if table.name in existing:
            _add_missing_columns(bind, table)


def _add_missing_columns(bind: sa.engine.Connection, table: sa.Table) -> None:
    """Columns that releases before migrations added (each has a server default)."""
    present = {c["name"] for c in sa.inspect(bind).get_columns(table.name)}
    for column in table.columns:
        if column.name in present or column.server_default is None:
            continue
        default = column.server_default.arg  # type: ignore[attr-defined]
        ddl = column.type.compile(bind.dialect)
        op.execute(
            f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {ddl} '
            f"NOT NULL DEFAULT '{default}'"
        )


def downgrade() -> None:
    for table in reversed(META.sorted_tables):
        table.drop(op.get_bind())
