"""A push of many changed files to a git repository, reflected in search: a git connector
over a repository of SciFact abstracts, synced once, then one commit with adds, edits,
deletes and renames; timed from the push notification (the webhook's queueing of the sync
job) until the job is done and a search for the last added file's marker finds it. The job
worker runs in the same process, as on a server.

    python -m benchmarks.git_push --docs 300 --changes 50
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import scifact_docs  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402
from citewell.types import SearchMode  # noqa: E402

IDENTITY = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
}


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, **IDENTITY}
    subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)


def change(repo: Path, count: int) -> dict[str, int]:
    """``count`` changes in one commit, a quarter each: adds, edits, deletes, renames."""
    files = sorted((repo / "docs").rglob("*.md"))
    quarter = count // 4
    for n in range(count - 3 * quarter):
        (repo / "docs" / f"added-{n}.md").write_text(f"Added note {n}: zqpush{n} marks it.")
    for path in files[:quarter]:
        path.write_text(path.read_text() + "\n\nEdited after the first sync.")
    for path in files[quarter : 2 * quarter]:
        path.unlink()
    for path in files[2 * quarter : 3 * quarter]:
        git(repo, "mv", str(path), str(path.with_name("moved-" + path.name)))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "many changes")
    return {"added": count - 3 * quarter, "edited": quarter, "deleted": quarter, "renamed": quarter}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--changes", type=int, default=50)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    try:
        repo = work / "repo"
        (repo / "docs").mkdir(parents=True)
        git(repo, "init", "-q", "-b", "main")
        for n, (doc_id, text) in enumerate(scifact_docs(args.docs)):
            folder = repo / "docs" / f"part{n % 5}"
            folder.mkdir(exist_ok=True)
            (folder / f"{doc_id}.md").write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "first")
        app = Citewell.from_settings(Settings.load(data_dir=work / "data"), embedder=OnnxEmbedder())
        app.catalog.ensure_kb("kb")
        made = app.connectors.store.create(
            app.kb_id("kb"), "git", "repo", str(repo), {"branch": "main"}, {}, 3600, local=True
        )
        first = time.monotonic()
        app.connectors.run(made.id)
        first_s = time.monotonic() - first
        app.start_workers()
        changes = change(repo, args.changes)
        last = f"zqpush{changes['added'] - 1}"
        pushed = time.monotonic()
        job = app.connectors.webhook(made.id, lambda _secret: True)  # a signed push arrived
        assert job is not None
        while app.jobs.get(job.id).state not in ("indexed", "failed", "cancelled"):
            time.sleep(0.05)
        hits = app.search(last, ["kb"], SearchMode.BM25, 3)
        reflected_s = time.monotonic() - pushed
        assert any(last in h.chunk.text for h in hits), "the pushed file is not searchable"
        status = app.connectors.store.get(made.id).status
        report = app.check(recall_samples=0)
        app.close()
        print(
            json.dumps(
                {
                    "docs": args.docs,
                    "changes": changes,
                    "first_sync_s": round(first_s, 1),
                    "push_to_search_s": round(reflected_s, 2),
                    "counts": {
                        k: getattr(status, k) for k in ("added", "updated", "deleted", "unchanged")
                    },
                    "chunks_embedded": status.chunks_embedded,
                    "check_problems": report.problems,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
