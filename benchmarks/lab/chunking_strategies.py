"""Every text_splitter on SciFact: nDCG@10 and recall@100 per search mode, chunks, ingestion.

Each strategy gets a fresh data dir under --work (the same bytes in one data dir would be
stored and chunked once), all sharing one embedding cache file, so a text that two
strategies both produce (a whole short abstract, say) is embedded once; ingestion times are
therefore "with the vectors other strategies already made", and the first strategy run pays
most. The default (character) runs first, as the baseline, in the same run.

    python -m benchmarks.lab.chunking_strategies --work /tmp/strategies [--only fixed,semantic]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.common import SCIFACT

STRATEGIES = {
    "character": {},
    "token": {"chunk_size": 256, "chunk_overlap": 32},
    "fixed": {"chunk_overlap": 0},
    "sliding_window": {"chunk_overlap": 200},
    "semantic": {},
    "semantic_threshold": {},
    "semantic_percentile": {},
}


def run(name: str, work: Path, cache: Path) -> dict[str, object]:
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import run_eval
    from citewell.types import SearchMode

    data_dir = work / name
    data_dir.mkdir(parents=True, exist_ok=True)
    shared = data_dir / "embeddings.sqlite"
    if not shared.exists():
        shared.symlink_to(cache)
    settings = Settings.load(data_dir=data_dir, text_splitter=name, **STRATEGIES[name])
    app = Citewell.from_settings(settings)
    began = time.perf_counter()
    report = run_eval(app, SCIFACT, "test", list(SearchMode))
    row: dict[str, object] = {
        "strategy": name,
        "settings": STRATEGIES[name],
        "chunks": report["ingest"]["chunks"],
        "ingest_s": report["ingest"].get("seconds"),
        "docs_per_s": report["ingest"]["docs_per_s"],
        "wall_s": round(time.perf_counter() - began, 1),
    }
    for mode in SearchMode:
        row[f"{mode.value}_ndcg@10"] = report[mode.value]["ndcg@10"]
        row[f"{mode.value}_recall@100"] = report[mode.value]["recall@100"]
    app.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--only", default="", help="Comma-separated strategies, run in order.")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    cache = (args.work / "embeddings.sqlite").resolve()
    names = args.only.split(",") if args.only else list(STRATEGIES)  # in the order given
    for name in names:
        print(json.dumps(run(name, args.work, cache)), flush=True)


if __name__ == "__main__":
    main()
