"""Model presets as one caller sees them: those of the model_presets setting (everyone's,
read-only) and those kept in the database (their owner's, and whom they are shared with).
A preset another user cannot use does not exist for them (404), as with KBs; one shared with
them shows only the KBs they may read (the others are kept, unnamed, when they change it)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from citewell.answer.chat import ChatPipeline
from citewell.catalog.preset import ModelPreset
from citewell.catalog.presets import PresetNotFound, StoredPreset
from citewell.engine.scoped import Scoped
from citewell.errors import Conflict, Forbidden

__all__ = ["ModelPreset", "PresetEntry", "ScopedPresets"]


@dataclass(frozen=True)
class PresetEntry:
    """A preset and where it comes from: 'settings' (id = its name) or 'api'."""

    id: str
    preset: ModelPreset
    source: str
    owner_id: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0


class ScopedPresets:
    def __init__(self, view: Scoped, chat: ChatPipeline) -> None:
        self.view = view
        self.access = view.access
        self.chat = chat
        self.store = chat.stored

    def list(self) -> list[PresetEntry]:
        configured = [PresetEntry(p.id, p, "settings") for p in self.chat.presets.values()]
        stored = [
            self._as_seen(_entry(s)) for s in self.store.all() if self.access.can_use_preset(s.id)
        ]
        return [*configured, *stored]

    def get(self, id_or_name: str) -> PresetEntry:
        entries = self.list()
        for entry in entries:
            if entry.id == id_or_name:
                return entry
        named = [e for e in entries if e.preset.id == id_or_name]
        named.sort(key=lambda e: e.owner_id != self.access.user_id)
        if not named:
            raise PresetNotFound(f"No model {id_or_name!r}; GET /api/v1/models lists them.")
        return named[0]

    def create(self, preset: ModelPreset) -> PresetEntry:
        if not self.access.can_create():
            raise Forbidden("This key cannot create models: it is limited or read-only.")
        self._free(preset.id)
        stored = self.store.create(self.access.user_id, self._resolved(preset))
        self.view.record("model.create", "model", stored.id, model=preset.id)
        return _entry(stored)

    def update(self, id_or_name: str, preset: ModelPreset) -> PresetEntry:
        entry = self._changeable(id_or_name)
        if preset.id != entry.preset.id:
            self._free(preset.id)
        resolved = self._resolved(preset)
        unseen = tuple(k for k in self.store.get(entry.id).preset.knowledge if not self._reads(k))
        resolved = replace(resolved, knowledge=tuple(dict.fromkeys((*resolved.knowledge, *unseen))))
        updated = self._as_seen(_entry(self.store.update(entry.id, resolved)))
        self.view.record("model.update", "model", entry.id, model=preset.id)
        return updated

    def delete(self, id_or_name: str) -> PresetEntry:
        entry = self._manageable(id_or_name)
        self.store.delete(entry.id)
        self.view.record("model.delete", "model", entry.id, model=entry.preset.id)
        return entry

    def managed(self, id_or_name: str) -> PresetEntry:
        """A preset whose sharing the caller may change: its owner's and admins'."""
        return self._manageable(id_or_name)

    def can_manage(self, entry: PresetEntry) -> bool:
        return entry.source == "api" and (self.access.is_admin or self._owns(entry))

    # --- rules -------------------------------------------------------------------------------
    def _free(self, name: str) -> None:
        if name in self.chat.presets:
            raise Conflict(f"{name!r} is a model of the model_presets setting; pick another name.")

    def _resolved(self, preset: ModelPreset) -> ModelPreset:
        """KBs stored by id: a name means the KB the creator reads now, not whichever KB of
        that name a later user happens to have."""
        return replace(preset, knowledge=tuple(self.view.kb(k).id for k in preset.knowledge))

    def _changeable(self, id_or_name: str) -> PresetEntry:
        entry = self.get(id_or_name)
        if entry.source == "settings":
            raise Forbidden(f"{entry.id!r} comes from the model_presets setting: change it there.")
        if not self.access.can_change_preset(entry.id):
            raise Forbidden(f"You may use model {entry.preset.id!r} but not change it.")
        return entry

    def _manageable(self, id_or_name: str) -> PresetEntry:
        entry = self._changeable(id_or_name)
        if not (self.access.is_admin or self._owns(entry)) or self.access.read_only:
            raise Forbidden(f"Only its owner and admins may delete or share {entry.preset.id!r}.")
        return entry

    def _as_seen(self, entry: PresetEntry) -> PresetEntry:
        """The preset with only the KBs the caller may read: a grantee does not learn the
        ids of its owner's other KBs."""
        knowledge = tuple(k for k in entry.preset.knowledge if self._reads(k))
        if knowledge == entry.preset.knowledge:
            return entry
        return replace(entry, preset=replace(entry.preset, knowledge=knowledge))

    def _reads(self, kb_id: str) -> bool:
        return self.access.can_read(kb_id)

    def _owns(self, entry: PresetEntry) -> bool:
        return bool(entry.owner_id) and entry.owner_id == self.access.user_id


def _entry(stored: StoredPreset) -> PresetEntry:
    return PresetEntry(
        stored.id, stored.preset, "api", stored.owner_id, stored.created_at, stored.updated_at
    )
