"""What the access filter costs a search: the same hybrid queries with no KB restriction (an
admin), with one readable KB, with every one of the corpus's KBs readable, and with a caller
who may read 1,000 KBs (the long `array_has_any` list). Query vectors are computed beforehand,
so the timings are retrieval alone; the variants run alternately per query.

    python -m benchmarks.access_filter --docs 1000 --kbs 100
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from benchmarks.common import SCIFACT, scifact_docs, summary  # noqa: E402
from benchmarks.query_latency import PrecomputedQueries  # noqa: E402
from citewell import Citewell, SearchMode, Settings  # noqa: E402
from citewell.auth import User  # noqa: E402
from citewell.auth.access import Access  # noqa: E402
from citewell.retrieval.retriever import HybridRetriever  # noqa: E402
from citewell.types import ChunkFilter  # noqa: E402


def build(docs: int, kbs: int) -> tuple[Citewell, list[str]]:
    """SciFact's first ``docs`` documents spread over ``kbs`` knowledge bases."""
    app = Citewell.from_settings(Settings.load(data_dir=Path(tempfile.mkdtemp())))
    corpus = scifact_docs(docs)
    ids = []
    for n in range(kbs):
        kb = app.create_kb(f"kb-{n:04d}")
        ids.append(kb.id)
        part = corpus[n::kbs]
        app.ingest_texts([(f"{doc_id}.md", text) for doc_id, text in part], kb.id, "text/markdown")
    return app, ids


def queries(limit: int) -> list[str]:
    with (SCIFACT / "queries.jsonl").open() as handle:
        return [json.loads(line)["text"] for line in handle][:limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--kbs", type=int, default=100)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    app, kb_ids = build(args.docs, args.kbs)
    asked = queries(args.queries)
    real = app.retriever
    app.retriever = HybridRetriever(
        app.store, PrecomputedQueries(real.space.embedder, asked), real.settings, real.reranker
    )
    user = User("u", "bench", "user", False, 0.0)
    fake = [f"{n:032x}" for n in range(1000 - len(kb_ids))]
    variants = {
        "admin (no KB filter)": Access.everything(),
        "1 readable KB": Access.of(user, None, kb_ids[:1], []),
        f"{len(kb_ids)} readable KBs": Access.of(user, None, kb_ids, []),
        "1,000 readable KBs": Access.of(user, None, [*kb_ids, *fake], []),
    }
    timings: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for query in asked:
            for name, access in variants.items():
                began = time.perf_counter()
                app.search_where(query, access.where(ChunkFilter()), SearchMode.HYBRID)
                timings[name].append((time.perf_counter() - began) * 1000)
    chunks = app.store.count(ChunkFilter())
    print(json.dumps({"docs": args.docs, "kbs": args.kbs, "chunks": chunks}))
    for name, values in timings.items():
        print(f"{name:24} {json.dumps(summary(values))}")


if __name__ == "__main__":
    main()
