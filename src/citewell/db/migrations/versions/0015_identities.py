"""Signing in with the company's identity (issue 51): ``user_identities`` links an identity
at a provider (OIDC issuer + subject, LDAP server + DN, a proxy's user name) to a user;
``sign_in_states`` holds OIDC sign-ins in flight and their one-time tickets;
``group_members.via`` tells memberships a provider made (and may take away) from an admin's.

Revision ID: 0015
Revises: 0014
Created: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Each step checks first, as 0013 does (a database set back to an earlier revision).
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table("user_identities"):
        _create_identities()
    if not inspector.has_table("sign_in_states"):
        op.create_table(
            "sign_in_states",
            sa.Column("id", sa.String(100), primary_key=True),
            sa.Column("kind", sa.String(20), nullable=False),
            sa.Column("data", sa.Text(), nullable=False, server_default=""),
            sa.Column("expires_at", sa.Float(), nullable=False, index=True),
        )
    columns = {c["name"] for c in inspector.get_columns("group_members")}
    if "via" not in columns:
        op.add_column(
            "group_members", sa.Column("via", sa.String(20), nullable=False, server_default="")
        )


def _create_identities() -> None:
    op.create_table(
        "user_identities",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "user_id",
            sa.String(32),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        ),
        sa.Column("method", sa.String(20), nullable=False),
        sa.Column("issuer", sa.String(500), nullable=False),
        sa.Column("subject", sa.String(500), nullable=False),
        sa.Column("email", sa.String(320), nullable=False, server_default=""),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_seen_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("method", "issuer", "subject", name="uq_identity"),
    )


def downgrade() -> None:
    with op.batch_alter_table("group_members") as batch:
        batch.drop_column("via")
    op.drop_table("sign_in_states")
    op.drop_table("user_identities")
