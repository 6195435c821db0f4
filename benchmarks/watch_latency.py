"""How long a change in a watched folder takes to reach search, end to end: a folder
connector (SciFact abstracts as .md files) on a Citewell whose job worker runs (and so
watches the folder, connector_watch), then edits one at a time — an added file, a changed
file, a deleted file, in turn — each timed from the write until a BM25 search for the
edit's own marker word answers accordingly.

    python -m benchmarks.watch_latency --docs 300 --edits 20
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import scifact_docs  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402
from citewell.types import SearchMode  # noqa: E402


def has(app: Citewell, word: str) -> bool:
    hits = app.search(word, ["kb"], SearchMode.BM25, 3)
    return any(word in hit.chunk.text for hit in hits)


def wait_until(check, timeout: float = 120.0) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise SystemExit("a change did not reach search in 120 s")
        time.sleep(0.05)
    return time.monotonic()


def edit(folder: Path, n: int) -> tuple[str, bool]:
    """The n-th edit: add a file, change it, delete it (in turn). Its marker word, and
    whether search should find it afterwards."""
    path = folder / f"edited-{n // 3}.md"
    marker = f"zqmarker{n // 3}x{n % 3}"
    kind = n % 3
    if kind == 0:
        path.write_text(f"An added note. {marker} is its word.")
    elif kind == 1:
        path.write_text(f"A changed note. {marker} is its word now.")
    else:
        path.unlink()
        return f"zqmarker{n // 3}x1", False
    return marker, True


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--edits", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    try:
        folder = work / "tree"
        folder.mkdir()
        for doc_id, text in scifact_docs(args.docs):
            (folder / f"{doc_id}.md").write_text(text)
        app = Citewell.from_settings(Settings.load(data_dir=work / "data"), embedder=OnnxEmbedder())
        app.catalog.ensure_kb("kb")
        made = app.connectors.store.create(
            app.kb_id("kb"), "folder", "tree", str(folder), {}, {}, 3600, local=True
        )
        app.connectors.run(made.id)
        app.start_workers()  # the job worker, and with it the folder watch
        time.sleep(6)  # the watch looks for connectors every 5 s
        seconds = []
        for n in range(args.edits):
            marker, present = edit(folder, n)
            written = time.monotonic()
            done = wait_until(lambda m=marker, p=present: has(app, m) == p)
            seconds.append(done - written)
        app.close()
        seconds.sort()
        p95 = seconds[max(0, round(0.95 * len(seconds)) - 1)]
        print(
            json.dumps(
                {
                    "docs": args.docs,
                    "edits": args.edits,
                    "median_s": round(statistics.median(seconds), 2),
                    "p95_s": round(p95, 2),
                    "max_s": round(seconds[-1], 2),
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
