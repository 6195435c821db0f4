"""Shared helpers for the benchmarks: SciFact location, corpus slices, timing."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SCIFACT = Path(os.environ.get("CITEWELL_SHARED_DATA", REPO.parent / "shared" / "data")) / "scifact"


def scifact_docs(limit: int | None = None) -> list[tuple[str, str]]:
    """(doc id, Markdown text) pairs, in corpus order."""
    docs = []
    with (SCIFACT / "corpus.jsonl").open() as handle:
        for line in handle:
            d = json.loads(line)
            docs.append((d["_id"], f"# {d['title']}\n\n{d['text']}"))
            if limit and len(docs) >= limit:
                break
    return docs


def pipeline_texts(docs: list[tuple[str, str]], splitter: Any) -> list[str]:
    """Exactly the texts the pipeline embeds for ``docs`` (chunks with their heading prefix),
    so the raw encoder can be timed on the same work."""
    from citewell import Document
    from citewell.ingest.chunk_rows import embed_text

    return [
        embed_text(c.text, c.headings, d.title or "")
        for d in (Document(t, n, "text/markdown") for n, t in docs)
        for c in splitter.split(d)
    ]


def encoder_and_texts(docs: list[tuple[str, str]]) -> tuple[Any, list[str]]:
    """The default onnx embedder, and exactly the texts the pipeline embeds for ``docs``
    with the default settings' splitter."""
    from citewell import Citewell, Settings
    from citewell.embedders import OnnxEmbedder

    embedder = OnnxEmbedder()
    with tempfile.TemporaryDirectory(prefix="citewell-bench-") as where:
        app = Citewell.from_settings(Settings.load(data_dir=Path(where)), embedder=embedder)
        try:
            return embedder, pipeline_texts(docs, app.splitter)
        finally:
            app.close()


def timed(fn: Callable[[], object]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
        "n": len(ordered),
    }


def open_scifact_index(data_dir: Path):  # noqa: ANN201 (benchmark helper)
    """(app, data, kb name) for the SciFact test split, ingesting the corpus if needed."""
    from citewell import Citewell, Settings
    from citewell.evaluation.beir import ingest_corpus, load_beir

    app = Citewell.from_settings(Settings.load(data_dir=data_dir))
    data = load_beir(SCIFACT, "test")
    return app, data, ingest_corpus(app, data, None)["kb"]
