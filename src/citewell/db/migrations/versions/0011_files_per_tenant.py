"""Files per tenant: identical bytes are one file only within one owner's KBs.

``files.sha256`` was unique, so the same bytes uploaded by two users were one file (one id,
the content's hash), and the second upload answered faster and carried the first one's
source and URL (issue 45). Now a file belongs to a tenant (the owner of the KBs holding
it) and (tenant, sha256) is unique; new files' ids are keyed hashes that nobody can compute
from the bytes (catalog.file_ids, its key in ``server_secrets``). A link keeps the source
and URL it came in with.

Files held by KBs of one owner only are that owner's; others (shared before this release)
stay the operator's (tenant "").

Revision ID: 0011
Revises: 0010
Created: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

LINKED_KBS = (
    "FROM knowledge_base_files l JOIN knowledge_bases kb ON kb.id = l.kb_id "
    "WHERE l.file_id = files.id"
)


def upgrade() -> None:
    if "tenant" in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("files")}:
        return  # applied already (one transaction): a version number set back by hand
    op.create_table(
        "server_secrets",
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("value", sa.String(200), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.add_column("files", sa.Column("tenant", sa.String(32), server_default="", nullable=False))
    op.create_index("uq_files_tenant_sha256", "files", ["tenant", "sha256"], unique=True)
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("files_sha256_key", "files", type_="unique")
    # SQLite cannot drop a constraint inside a transaction: db.legacy.relax_file_hashes does
    # after the migrations (a table rebuild with foreign keys off).
    op.execute(
        f"UPDATE files SET tenant = (SELECT MIN(kb.owner_id) {LINKED_KBS}) "
        f"WHERE (SELECT COUNT(DISTINCT kb.owner_id) {LINKED_KBS}) = 1"
    )
    op.add_column(
        "knowledge_base_files",
        sa.Column("source", sa.String(20), server_default="", nullable=False),
    )
    op.add_column(
        "knowledge_base_files", sa.Column("url", sa.Text(), server_default="", nullable=False)
    )
    op.execute(
        "UPDATE knowledge_base_files SET source = (SELECT source FROM files WHERE "
        "files.id = knowledge_base_files.file_id), url = (SELECT url FROM files WHERE "
        "files.id = knowledge_base_files.file_id)"
    )


def downgrade() -> None:
    """Fails on PostgreSQL where two tenants hold the same bytes (merge them first). Not on
    SQLite: dropping a column there rebuilds the table, which other tables' foreign keys
    forbid inside a migration's transaction (see db/legacy.py)."""
    if op.get_bind().dialect.name == "sqlite":
        raise RuntimeError(
            "Revision 0011 (files per tenant) cannot be undone on SQLite; restore a copy of "
            "the data dir made before the upgrade instead."
        )
    op.drop_table("server_secrets")
    op.drop_index("uq_files_tenant_sha256", table_name="files")
    with op.batch_alter_table("knowledge_base_files") as batch:
        batch.drop_column("url")
        batch.drop_column("source")
    with op.batch_alter_table("files") as batch:
        batch.drop_column("tenant")
    if op.get_bind().dialect.name == "postgresql":
        op.create_unique_constraint("files_sha256_key", "files", ["sha256"])
