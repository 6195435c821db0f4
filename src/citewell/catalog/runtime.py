"""Settings an admin changed at run time, kept in the metadata database so that they outlive
a restart and every process on the database reads the same values."""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine
from sqlalchemy.orm import sessionmaker

from citewell.db import ensure_schema
from citewell.db.engine import read_sessions
from citewell.db.models import RuntimeSettingRow


class RuntimeSettingsStore:
    """Name → value (JSON) of the settings changed at run time; absent names keep the value
    the process started with (environment, config file or default)."""

    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        self._reads = read_sessions(engine)

    def load(self) -> dict[str, Any]:
        with self._reads() as session:
            rows = session.scalars(select(RuntimeSettingRow)).all()
        return {row.name: json.loads(row.value) for row in rows}

    def save(self, values: Mapping[str, Any], user_id: str) -> None:
        """Set ``values`` in one transaction: a reader sees all of them or none."""
        now = time.time()
        with self._sessions() as session, session.begin():
            for name, value in values.items():
                row = session.get(RuntimeSettingRow, name)
                if row is None:
                    row = RuntimeSettingRow(name=name)
                    session.add(row)
                row.value = json.dumps(value)
                row.updated_at = now
                row.updated_by = user_id

    def reset(self, names: Collection[str] | None = None) -> None:
        """Forget the run-time values of ``names`` (all when None)."""
        statement = delete(RuntimeSettingRow)
        if names is not None:
            statement = statement.where(RuntimeSettingRow.name.in_(list(names)))
        with self._sessions() as session, session.begin():
            session.execute(statement)
