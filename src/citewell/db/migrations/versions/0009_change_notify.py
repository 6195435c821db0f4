"""On PostgreSQL, triggers that notify listening processes of every change to the tables a
request reads, so each can keep what it read until then (db/change_listener.py). Nothing on
SQLite, where revision 0008's counter does this.

Revision ID: 0009
Revises: 0008
Created: 2026-11-24
"""

from __future__ import annotations

from alembic import op

from citewell.db.change_listener import create_notify_triggers, drop_notify_triggers
from citewell.db.changes import TRACKED

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_notify_triggers(op.get_bind(), TRACKED)


def downgrade() -> None:
    drop_notify_triggers(op.get_bind(), TRACKED)
