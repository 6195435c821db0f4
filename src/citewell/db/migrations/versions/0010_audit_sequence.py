"""On PostgreSQL, the audit log's id sequence moved past the rows already there.

`citewell migrate` copied audit events with their ids and left the sequence at 1, so the
next audited action (a share, a new key) failed as a duplicate id. The move now sets the
sequence itself; this repairs databases moved before that.

Revision ID: 0010
Revises: 0009
Created: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    # Only forward: a sequence already past the rows (ids of deleted events) stays.
    op.execute(
        "SELECT setval(pg_get_serial_sequence('audit_events', 'id'), MAX(id)) "
        "FROM audit_events HAVING MAX(id) >= COALESCE(pg_sequence_last_value("
        "pg_get_serial_sequence('audit_events', 'id')::regclass), 0)"
    )


def downgrade() -> None:
    pass  # a sequence ahead of the rows does no harm
