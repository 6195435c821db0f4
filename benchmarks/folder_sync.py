"""A folder connector's first sync next to `citewell ingest` of the same folder, then a
re-sync with nothing changed, and one after a few renames (nothing to embed). SciFact
abstracts as .md files in nested folders; a fresh data dir for each side.

    python -m benchmarks.folder_sync --docs 1000
    python -m benchmarks.folder_sync --docs 10000 --halves   # the issue's 10,000 files
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import scifact_docs, timed  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402


def write_tree(root: Path, docs: list[tuple[str, str]]) -> None:
    for n, (doc_id, text) in enumerate(docs):
        folder = root / f"part{n % 10}" / f"sub{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{doc_id}.md").write_text(text)


def halves(docs: list[tuple[str, str]], files: int) -> list[tuple[str, str]]:
    """More files than SciFact has abstracts (5,183): each abstract as two files, its
    title with the first half of its sentences and the rest (distinct bytes and texts)."""
    split = []
    for doc_id, text in docs:
        title, _, body = text.partition("\n\n")
        sentences = body.split(". ")
        middle = max(1, len(sentences) // 2)
        split.append((f"{doc_id}-a", f"{title}\n\n" + ". ".join(sentences[:middle])))
        split.append((f"{doc_id}-b", ". ".join(sentences[middle:]) or title))
    return split[:files]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--renames", type=int, default=50)
    parser.add_argument("--halves", action="store_true", help="Two files per abstract.")
    args = parser.parse_args()
    docs = halves(scifact_docs(), args.docs) if args.halves else scifact_docs(args.docs)
    embedder = OnnxEmbedder()
    work = Path(tempfile.mkdtemp())
    try:
        tree = work / "tree"
        write_tree(tree, docs)
        ingesting = Citewell.from_settings(Settings.load(data_dir=work / "a"), embedder=embedder)
        ingest_s = timed(lambda: ingesting.ingest([tree], "kb"))
        syncing = Citewell.from_settings(Settings.load(data_dir=work / "b"), embedder=embedder)
        syncing.catalog.ensure_kb("kb")
        made = syncing.connectors.store.create(
            syncing.kb_id("kb"), "folder", "tree", str(tree), {}, {}, 3600, local=True
        )
        first_s = timed(lambda: syncing.connectors.run(made.id))
        tallies = {}
        resync_s = timed(lambda: tallies.setdefault("resync", syncing.connectors.run(made.id)))
        for path in sorted(tree.rglob("*.md"))[: args.renames]:
            path.rename(path.with_name("renamed-" + path.name))
        renames_s = timed(lambda: tallies.setdefault("renames", syncing.connectors.run(made.id)))
        print(
            json.dumps(
                {
                    "docs": args.docs,
                    "ingest_s": round(ingest_s, 1),
                    "first_sync_s": round(first_s, 1),
                    "sync_over_ingest": round(first_s / ingest_s, 3),
                    "resync_s": round(resync_s, 2),
                    "resync_embedded": tallies["resync"].chunks_embedded,
                    "renames": args.renames,
                    "renames_s": round(renames_s, 2),
                    "renames_embedded": tallies["renames"].chunks_embedded,
                }
            )
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
