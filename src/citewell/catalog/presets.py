"""Model presets kept in the metadata database (made over the API), beside those the
``model_presets`` setting defines. A preset is a model name that binds knowledge bases, a
base model, a template and its own retrieval."""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass

from sqlalchemy import delete, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from citewell.catalog.preset import ModelPreset, preset_from_dict
from citewell.db import ensure_schema
from citewell.db.changes import ChangeCache, change_counter
from citewell.db.models import ModelPresetRow, PresetGrantRow
from citewell.errors import Conflict, NotFoundError


class PresetNotFound(NotFoundError):
    code = "model_not_found"


@dataclass(frozen=True)
class StoredPreset:
    id: str  # stable; the preset's name (its model name) may change
    owner_id: str
    preset: ModelPreset
    created_at: float
    updated_at: float


class PresetStore:
    def __init__(self, engine: Engine) -> None:
        ensure_schema(engine)
        self._sessions = sessionmaker(engine, expire_on_commit=False)
        # Every chat request lists the presets; they change rarely.
        self._all: ChangeCache[None, tuple[StoredPreset, ...]] = ChangeCache(change_counter(engine))

    def create(self, owner_id: str, preset: ModelPreset) -> StoredPreset:
        row = ModelPresetRow(name=preset.id, owner_id=owner_id, config=_config(preset))
        try:
            with self._sessions() as session, session.begin():
                session.add(row)
        except IntegrityError as exc:
            raise Conflict(f"You have a model named {preset.id!r}; pick another name.") from exc
        return _stored(row)

    def get(self, preset_id: str) -> StoredPreset:
        with self._sessions() as session:
            row = session.get(ModelPresetRow, preset_id)
        if row is None:
            raise PresetNotFound(f"No model {preset_id!r}; GET /api/v1/models lists them.")
        return _stored(row)

    def all(self, ids: Collection[str] | None = None) -> list[StoredPreset]:
        """All presets (``ids``: only those), oldest first."""
        if ids is None:
            return list(self._all.get(None, lambda: tuple(self._read(None))))
        return self._read(ids)

    def _read(self, ids: Collection[str] | None) -> list[StoredPreset]:
        query = select(ModelPresetRow).order_by(ModelPresetRow.created_at)
        if ids is not None:
            query = query.where(ModelPresetRow.id.in_(list(ids)))
        with self._sessions() as session:
            return [_stored(r) for r in session.scalars(query)]

    def owned_by(self, owner_id: str) -> list[str]:
        with self._sessions() as session:
            query = select(ModelPresetRow.id).where(ModelPresetRow.owner_id == owner_id)
            return list(session.scalars(query))

    def update(self, preset_id: str, preset: ModelPreset) -> StoredPreset:
        try:
            with self._sessions() as session, session.begin():
                row = session.get(ModelPresetRow, preset_id)
                if row is None:
                    raise PresetNotFound(f"No model {preset_id!r}; GET /api/v1/models lists them.")
                row.name, row.config, row.updated_at = preset.id, _config(preset), time.time()
        except IntegrityError as exc:
            raise Conflict(f"You have a model named {preset.id!r}; pick another name.") from exc
        return _stored(row)

    def delete(self, preset_id: str) -> None:
        with self._sessions() as session, session.begin():
            session.execute(delete(PresetGrantRow).where(PresetGrantRow.preset_id == preset_id))
            session.execute(delete(ModelPresetRow).where(ModelPresetRow.id == preset_id))


def _config(preset: ModelPreset) -> str:
    fields = asdict(preset)
    fields.pop("id")
    fields["knowledge"] = list(fields["knowledge"])
    return json.dumps(fields)


def _stored(row: ModelPresetRow) -> StoredPreset:
    preset = preset_from_dict({**json.loads(row.config), "id": row.name})
    return StoredPreset(row.id, row.owner_id, preset, row.created_at, row.updated_at)
