"""A KB's own retrieval defaults: merged field by field, shared only when KBs agree, and
seen by other processes at their next search."""

from __future__ import annotations

from citewell.catalog import Catalog
from citewell.catalog.kb_settings import NO_SETTINGS, KnowledgeSettings, common
from citewell.db import sqlite_engine
from citewell.types import SearchMode


def test_fields_change_one_at_a_time_and_none_clears():
    own = NO_SETTINGS.updated({"top_k": 3, "mode": "bm25"})
    assert own.set == {"top_k": 3, "mode": "bm25"}
    assert own.updated({"mode": None}).set == {"top_k": 3}
    assert KnowledgeSettings.from_json(own.to_json()) == own
    assert KnowledgeSettings.from_json('{"top_k": 3, "retired_field": 1}').top_k == 3


def test_kbs_share_defaults_only_when_they_agree():
    a = KnowledgeSettings(mode=SearchMode.VECTOR)
    assert common([a, a]) == a
    assert common([a, NO_SETTINGS]) == NO_SETTINGS
    assert common([]) == NO_SETTINGS


def test_another_process_sees_a_change_at_its_next_search(tmp_path):
    """Kept per process until the database's change counter moves (db/changes.py)."""
    path = tmp_path / "db.sqlite"
    mine, theirs = Catalog(sqlite_engine(path)), Catalog(sqlite_engine(path))
    kb = mine.create_kb("notes", settings=KnowledgeSettings(top_k=2))
    assert theirs.kb_settings([kb.id]).top_k == 2
    assert theirs.kb_settings([kb.id]).top_k == 2  # from what it kept
    mine.update_kb(kb.id, settings=KnowledgeSettings(top_k=5))
    assert mine.kb_settings([kb.id]).top_k == 5
    assert theirs.kb_settings([kb.id]).top_k == 5
