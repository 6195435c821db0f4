"""File ids (catalog.file_ids): the same for one tenant's bytes in every process, another
for another tenant, and never the content's hash that anyone holding a copy could compute."""

import hashlib

from citewell.catalog.file_ids import FileIds
from citewell.db import ensure_schema, sqlite_engine


def test_ids_are_keyed_per_database_and_tenant(tmp_path):
    engine = sqlite_engine(tmp_path / "citewell.sqlite")
    ensure_schema(engine)
    sha = hashlib.sha256(b"the same bytes").hexdigest()
    first, second = FileIds(engine), FileIds(engine)  # two processes of one server
    assert first("alice", sha) == second("alice", sha)
    assert first("alice", sha) != first("bob", sha)
    assert sha[:32] not in {first("alice", sha), first("", sha)}
    assert len(first("alice", sha)) == 32
    other = sqlite_engine(tmp_path / "other.sqlite")
    ensure_schema(other)
    assert FileIds(other)("alice", sha) != first("alice", sha)  # its own key
