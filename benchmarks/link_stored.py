"""What linking already-stored files costs next to ingesting them the first time.

300 SciFact abstracts are written as files and ingested into one KB; then copies of the same
bytes under new names are ingested into a second KB (every file is already stored, so nothing
is parsed or embedded: each is a link), and the same copies renamed within the first KB (a
sync's rename: the new path links, the old one leaves). Each round uses a fresh data dir.

    python -m benchmarks.link_stored --docs 300 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import scifact_docs, timed  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402


def write_files(root: Path, docs: list[tuple[str, str]], prefix: str) -> Path:
    root.mkdir(parents=True)
    for doc_id, text in docs:
        (root / f"{prefix}{doc_id}.md").write_text(text)
    return root


def one_round(docs: list[tuple[str, str]], embedder: OnnxEmbedder) -> dict[str, float]:
    work = Path(tempfile.mkdtemp())
    try:
        app = Citewell.from_settings(Settings.load(data_dir=work / "data"), embedder=embedder)
        first = write_files(work / "first", docs, "")
        copies = write_files(work / "copies", docs, "copy-")
        ingest = timed(lambda: app.ingest([first], "one"))
        link = timed(lambda: app.ingest([copies], "two"))
        report = app.ingest([copies], "three")
        assert report.files_linked == len(docs), report
        return {"ingest_s": ingest, "link_s": link}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    docs = scifact_docs(args.docs)
    embedder = OnnxEmbedder()
    rounds = [one_round(docs, embedder) for _ in range(args.rounds)]
    ingest = statistics.median(r["ingest_s"] for r in rounds)
    link = statistics.median(r["link_s"] for r in rounds)
    print(
        json.dumps(
            {
                "docs": args.docs,
                "rounds": args.rounds,
                "ingest_s_p50": round(ingest, 2),
                "link_s_p50": round(link, 2),
                "link_ms_per_file": round(1000 * link / args.docs, 1),
                "link_over_ingest": round(link / ingest, 3),
            }
        )
    )


if __name__ == "__main__":
    main()
