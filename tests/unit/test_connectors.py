"""Folder and git connectors kept in sync with a KB, on the embedded stores: adds, edits,
renames and deletes propagate; renames embed nothing; what may not be read is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.errors import Forbidden, InvalidInput, UrlBlocked
from citewell.ingest.connector_runs import syncable
from citewell.services.connectors import ConnectorService, ConnectorSpec
from citewell.sources.connectors import Listing, SyncEntry, SyncRequest
from citewell.sources.registry import SourceContext

OWLS = "# Owls\n\nOwls hunt at night and swallow mice whole."
PENGUINS = "Penguins cannot fly, but they swim fast in cold seas."
CHERRIES = "# Cherries\n\nCherries are small stone fruits that ripen in June."


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def paths(app: Citewell, kb: str) -> list[str]:
    return sorted(link.path for link in app.catalog.links(kb_ids=[app.kb_id(kb)]))


def connector(app: Citewell, kb: str, kind: str, target: str, **options: str):  # noqa: ANN201
    app.catalog.ensure_kb(kb)
    kb_id = app.kb_id(kb)
    return app.connectors.store.create(kb_id, kind, kind, target, options, {}, 3600, local=True)


def test_a_folder_sync_adds_changes_renames_and_deletes(app: Citewell, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(
        docs, {"owls.md": OWLS, "birds/penguins.txt": PENGUINS, "fruit/deep/cherries.md": CHERRIES}
    )
    made = connector(app, "notes", "folder", str(docs), folder="docs")
    first = app.connectors.run(made.id)
    assert (first.added, first.deleted, first.failed) == (3, 0, 0)
    assert paths(app, "notes") == [
        "docs/birds/penguins.txt",
        "docs/fruit/deep/cherries.md",
        "docs/owls.md",
    ]
    again = app.connectors.run(made.id)
    assert (again.unchanged, again.added, again.chunks_embedded) == (3, 0, 0)

    (docs / "birds/penguins.txt").rename(docs / "fruit/penguins-moved.txt")  # a move
    write(docs, {"owls.md": OWLS + " They nest in old trees."})  # an edit
    (docs / "fruit/deep/cherries.md").unlink()  # a delete
    changed = app.connectors.run(made.id)
    assert (changed.added, changed.updated, changed.deleted) == (1, 1, 2)
    assert paths(app, "notes") == ["docs/fruit/penguins-moved.txt", "docs/owls.md"]
    assert "Penguins" in app.search("penguins swim in cold seas", ["notes"], k=1)[0].chunk.text
    assert all("Cherries" not in hit.chunk.text for hit in app.search("cherries", ["notes"], k=3))
    report = app.check()
    assert not report.orphan_chunks and not report.missing_chunks and not report.files_in_no_kb
    status = app.connectors.store.get(made.id).status
    assert (status.state, status.added, status.deleted) == ("ok", 1, 2)


def test_a_move_embeds_nothing(app: Citewell, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs, {"a/owls.md": OWLS, "b/penguins.txt": PENGUINS})
    made = connector(app, "moves", "folder", str(docs))
    app.connectors.run(made.id)
    embedded = app.embedder.embedded
    os.renames(docs / "a/owls.md", docs / "c/d/owls-renamed.md")
    tally = app.connectors.run(made.id)
    assert (tally.added, tally.deleted, tally.chunks_embedded) == (1, 1, 0)
    assert app.embedder.embedded == embedded
    assert paths(app, "moves") == ["b/penguins.txt", "c/d/owls-renamed.md"]


def test_ignore_files_globs_hidden_entries_and_symlinks(app: Citewell, tmp_path: Path) -> None:
    docs, outside = tmp_path / "docs", tmp_path / "outside"
    write(
        docs,
        {
            "keep.md": OWLS,
            "draft-1.md": PENGUINS,
            "sub/.gitignore": "*.txt\n",
            "sub/skip.txt": PENGUINS,
            "sub/keep.md": CHERRIES,
            ".secret.md": "hidden",
            "build/out.md": "generated",
            ".citewellignore": "draft-*\n",
        },
    )
    write(outside, {"passwords.md": "root:hunter2"})
    (docs / "leak.md").symlink_to(outside / "passwords.md")
    (docs / "linked-dir").symlink_to(outside, target_is_directory=True)
    made = connector(app, "picky", "folder", str(docs), exclude="build/")
    tally = app.connectors.run(made.id)
    assert paths(app, "picky") == ["keep.md", "sub/keep.md"]
    assert tally.failed == 1 and "leak.md" in tally.errors[0] and "outside" in tally.errors[0]


def test_an_empty_listing_deletes_nothing_unless_allowed(app: Citewell, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(docs, {"owls.md": OWLS})
    made = connector(app, "mount", "folder", str(docs))
    app.connectors.run(made.id)
    (docs / "owls.md").unlink()  # as an unmounted share looks
    with pytest.raises(InvalidInput, match="nothing was deleted"):
        app.connectors.run(made.id)
    assert paths(app, "mount") == ["owls.md"]
    assert app.connectors.store.get(made.id).status.state == "failed"
    app.connectors.store.update(made.id, options={"allow_empty": "true"})
    assert app.connectors.run(made.id).deleted == 1
    assert paths(app, "mount") == []


def test_a_failed_item_is_reported_and_retried_next_time(app: Citewell, tmp_path: Path) -> None:
    made = connector(app, "flaky", "folder", str(tmp_path))
    broken = {"fail": True}

    def read() -> bytes:
        if broken["fail"]:
            raise InvalidInput("the share dropped the connection")
        return PENGUINS.encode()

    def listing() -> Listing:
        entries = [SyncEntry("owls.md", "v1", OWLS.encode), SyncEntry("penguins.txt", "v1", read)]
        return Listing(iter(entries))

    first = app.connectors.sync_once(made, listing())
    assert (first.added, first.failed) == (1, 1) and "dropped" in first.errors[0]
    broken["fail"] = False
    second = app.connectors.sync_once(made, listing())
    assert (second.added, second.unchanged, second.failed) == (1, 1, 0)


def test_folders_outside_the_allow_list_are_refused(tmp_path: Path, onnx_embedder) -> None:
    allowed = tmp_path / "allowed"
    write(allowed, {"ok.md": OWLS})
    write(tmp_path / "private", {"secret.md": "not yours"})
    settings = Settings.load(data_dir=tmp_path / "data", connector_allowed_paths=str(allowed))
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped

    service = ConnectorService(Scoped(app, Access.everything()))  # over the API: not local
    service.ensure_kb("kb")
    service.create("kb", ConnectorSpec("folder", str(allowed)))
    for target in (
        str(tmp_path / "private"),
        str(allowed / ".." / "private"),
        "/etc",
    ):
        with pytest.raises(Forbidden, match="connector_allowed_paths"):
            service.create("kb", ConnectorSpec("folder", target, name="x"))
    (allowed / "escape").symlink_to(tmp_path / "private", target_is_directory=True)
    with pytest.raises(Forbidden):
        service.create("kb", ConnectorSpec("folder", str(allowed / "escape"), name="y"))
    with pytest.raises(InvalidInput, match="absolute"):
        service.create("kb", ConnectorSpec("folder", "relative/path", name="z"))
    with pytest.raises(Forbidden):  # a git repository given as a local path: the same rule
        service.create("kb", ConnectorSpec("git", f"file://{tmp_path / 'private'}", name="g"))
    with pytest.raises(InvalidInput, match="credentials"):
        service.create("kb", ConnectorSpec("git", "https://me:pw@example.org/r.git", name="c"))
    app.close()


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ext::sh -c touch% /tmp/pwned", InvalidInput),
        ("--upload-pack=touch /tmp/pwned", InvalidInput),
        ("ftp://example.org/repo.git", InvalidInput),
        ("http://127.0.0.1/repo.git", UrlBlocked),
        ("http://169.254.169.254/latest/meta-data", UrlBlocked),
        ("https://[::1]/repo.git", UrlBlocked),
    ],
)
def test_git_urls_that_may_not_be_cloned(app: Citewell, url: str, error: type) -> None:
    source = syncable("git", SourceContext(app.settings, app.web.reader))
    with pytest.raises(error):
        source.check(SyncRequest(url))


def git(repo: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


def test_a_git_repository_syncs_commit_by_commit(app: Citewell, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "docs/owls.md": OWLS,
            "docs/birds/penguins.txt": PENGUINS,
            "code.py": "x = 1",
            "README.md": CHERRIES,
        },
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    made = connector(app, "repo", "git", str(repo), branch="main", path="docs")
    first = app.connectors.run(made.id)
    assert first.added == 2
    assert paths(app, "repo") == ["birds/penguins.txt", "owls.md"]
    assert app.connectors.store.get(made.id).cursor == git(repo, "rev-parse", "HEAD")

    git(repo, "mv", "docs/birds/penguins.txt", "docs/penguins.txt")
    write(repo, {"docs/owls.md": OWLS + " Barn owls screech.", "docs/new.md": CHERRIES})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    embedded = app.embedder.embedded
    second = app.connectors.run(made.id)
    assert (second.added, second.updated, second.deleted) == (2, 1, 1)
    assert paths(app, "repo") == ["new.md", "owls.md", "penguins.txt"]
    assert app.embedder.embedded - embedded <= 2  # the edit and the new file, not the move


@pytest.fixture
def git_daemon(tmp_path: Path):  # noqa: ANN201
    import socket
    import time

    base = tmp_path / "served"
    repo = base / "remote.git"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"guide.md": OWLS})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    daemon = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            f"--base-path={base}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(base),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert time.monotonic() < deadline, "git daemon did not start"
        time.sleep(0.05)
    try:
        yield f"git://127.0.0.1:{port}/remote.git", repo
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


def test_a_remote_repository_over_the_git_protocol(
    tmp_path: Path, onnx_embedder, git_daemon
) -> None:
    url, repo = git_daemon
    settings = Settings.load(data_dir=tmp_path / "data", web_fetch_allowlist="127.0.0.1")
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    made = connector(app, "remote", "git", url)
    assert app.connectors.run(made.id).added == 1
    write(repo, {"more.md": PENGUINS})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    assert app.connectors.run(made.id).added == 1
    assert paths(app, "remote") == ["guide.md", "more.md"]
    app.close()


def test_a_change_during_a_sync_queues_one_more_behind_it(app: Citewell, tmp_path: Path) -> None:
    """A push or a watched change while a sync runs: that run may have listed the source
    before the change, so one more sync waits behind it (one, however many changes come);
    a connector's second sync claimed by another batch waits until the first is done."""
    from citewell.engine.runner import JobRunner

    write(tmp_path / "docs", {"owls.md": OWLS})
    made = connector(app, "kb", "folder", str(tmp_path / "docs"))
    runs = app.connectors
    first = runs.queue(made)
    (running,) = app.jobs.claim(10, ("sync",))  # a worker took it
    assert runs.queue(made).id == first.id  # the schedule: the run going on will do
    behind = runs.queue(made, after_running=True)
    assert behind.id != first.id and behind.state == "queued"
    assert runs.queue(made, after_running=True).id == behind.id
    (waiting,) = app.jobs.claim(10, ("sync",))  # another batch (another worker) takes it
    assert app.jobs.running_elsewhere(waiting) and app.jobs.running_elsewhere(running)
    runner = JobRunner(app.jobs, app.ingestor, app.storage, connectors=runs)
    runner.handlers["sync"].run(made.kb_id, [waiting])
    deferred = app.jobs.get(waiting.id)
    assert (deferred.state, deferred.attempts) == ("queued", 0)  # not run, not counted
    runner.handlers["sync"].run(made.kb_id, [running])
    assert app.jobs.get(running.id).state == "indexed"
    assert paths(app, "kb") == ["owls.md"]
    assert not app.jobs.running_elsewhere(deferred)


def test_a_changed_file_is_never_found_in_both_versions(
    app: Citewell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new version's chunks and the old one's removal are separate chunk-table writes;
    a search after each finds one version: the old until the path's link moves in the
    catalog, the new from then on."""
    write(tmp_path / "docs", {"plan.md": "The plan names the Albatross route."})
    made = connector(app, "notes", "folder", str(tmp_path / "docs"))
    app.connectors.run(made.id)
    write(tmp_path / "docs", {"plan.md": "The plan names the Heron route."})
    seen: list[tuple[bool, bool]] = []

    def search_after(write_rows):  # noqa: ANN001, ANN202
        def wrapped(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            done = write_rows(*args, **kwargs)
            hits = app.search("the plan names the route", ["notes"], k=5)
            texts = " ".join(hit.chunk.text for hit in hits)
            seen.append(("Albatross" in texts, "Heron" in texts))
            return done

        return wrapped

    store = app.ingestor.store
    for name in ("upsert_matrix", "unlink", "delete"):
        monkeypatch.setattr(store, name, search_after(getattr(store, name)))
    assert app.connectors.run(made.id).updated == 1
    assert len(seen) >= 2 and seen[0] == (True, False) and seen[-1] == (False, True), seen
    assert (True, True) not in seen and (False, False) not in seen, seen


def test_a_sync_asked_for_is_the_intervals_run(app: Citewell, tmp_path: Path) -> None:
    """A new connector is due at once; its first sync, queued as it is made (as the API
    does), is that run: once it finishes, the schedule queues no second one until an
    interval has passed. The same for a sync asked for by hand."""
    from citewell.engine.runner import JobRunner

    write(tmp_path / "docs", {"owls.md": OWLS})
    made = connector(app, "kb", "folder", str(tmp_path / "docs"))
    runs = app.connectors
    first = runs.queue(made)
    (running,) = app.jobs.claim(10, ("sync",))
    JobRunner(app.jobs, app.ingestor, app.storage, connectors=runs).handlers["sync"].run(
        made.kb_id, [running]
    )
    assert app.jobs.get(first.id).state == "indexed"
    assert runs.queue_due(force=True) == 0  # before: a second run of an unchanged folder
    assert app.jobs.unfinished("sync", made.id) is None
    later = runs.store.get(made.id)
    assert later is not None and later.next_run_at > made.next_run_at + 3000
    app.close()
