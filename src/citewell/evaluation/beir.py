"""Evaluate retrieval on a BEIR-format folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.

The corpus is ingested through the normal pipeline into a knowledge base named after the
folder and the settings that shape the index, so a second run with the same corpus and
settings reuses it (and the embedding cache makes even a changed chunking cheap to redo).
"""

from __future__ import annotations

import csv
import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from citewell.app import Citewell
from citewell.errors import InvalidInput
from citewell.evaluation.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k
from citewell.ingest.types import ProgressCallback
from citewell.types import SearchMode

INDEX_SETTINGS = (
    "text_splitter",
    "markdown_header_splitter",
    "chunk_size",
    "chunk_overlap",
    "chunk_min_size_target",
    "embedding_engine",
    "embedding_model",
    "embedding_max_tokens",
    "embedding_onnx_path",
    "bm25_stemmer",
)
SWITCHES = ("sentence_vectors",)  # in the fingerprint when on (older indexes keep their name)


@dataclass(frozen=True)
class BeirData:
    name: str
    corpus: dict[str, tuple[str, str]]  # doc id → (title, text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_beir(folder: Path, split: str) -> BeirData:
    qrels_path = folder / "qrels" / f"{split}.tsv"
    for path in (folder / "corpus.jsonl", folder / "queries.jsonl", qrels_path):
        if not path.is_file():
            raise InvalidInput(
                f"{path} is missing; a BEIR folder holds corpus.jsonl, "
                "queries.jsonl and qrels/<split>.tsv."
            )
    corpus = {
        str(d["_id"]): (d.get("title", ""), d.get("text", ""))
        for d in _jsonl(folder / "corpus.jsonl")
    }
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    queries = {
        str(q["_id"]): q["text"] for q in _jsonl(folder / "queries.jsonl") if str(q["_id"]) in qrels
    }
    return BeirData(folder.resolve().name, corpus, queries, qrels)


def document_markdown(title: str, text: str) -> str:
    return f"# {title}\n\n{text}" if title else text


def index_fingerprint(cw: Citewell, data: BeirData) -> str:
    shape = {name: str(cw.settings.value(name)) for name in INDEX_SETTINGS}
    shape |= {name: "True" for name in SWITCHES if cw.settings.value(name)}
    shape["docs"] = str(len(data.corpus))
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:10]


def ingest_corpus(
    cw: Citewell, data: BeirData, progress: ProgressCallback | None
) -> dict[str, Any]:
    kb = f"beir-{data.name}-{index_fingerprint(cw, data)}"
    stats_path = cw.settings.storage.data_dir / "eval" / f"{kb}.json"
    if cw.catalog.find_kb(kb) and stats_path.is_file():
        return {**json.loads(stats_path.read_text()), "kb": kb, "reused": True}
    texts = [(doc_id, document_markdown(*fields)) for doc_id, fields in data.corpus.items()]
    started = time.perf_counter()
    report = cw.ingest_texts(texts, kb, mime_type="text/markdown", progress=progress)
    seconds = time.perf_counter() - started
    stats = {
        "docs": len(texts),
        "chunks": report.chunks_stored,
        "chunks_embedded": report.chunks_embedded,
        "seconds": round(seconds, 2),
        "docs_per_s": round(len(texts) / seconds, 2),
        "chunks_per_s": round(report.chunks_stored / seconds, 2),
    }
    stats_path.parent.mkdir(parents=True, exist_ok=True)
    stats_path.write_text(json.dumps(stats))
    return {**stats, "kb": kb, "reused": False}


@dataclass(frozen=True)
class ModeResult:
    ndcg_at_10: float
    recall_at_10: float
    recall_at_100: float
    mrr_at_10: float
    latency_ms_p50: float
    latency_ms_p95: float
    queries: int

    def public(self) -> dict[str, float]:
        names = {
            "ndcg_at_10": "ndcg@10",
            "recall_at_10": "recall@10",
            "recall_at_100": "recall@100",
            "mrr_at_10": "mrr@10",
        }
        return {
            names.get(k, k): round(v, 4) if isinstance(v, float) else v
            for k, v in asdict(self).items()
        }


def evaluate_mode(cw: Citewell, data: BeirData, kb: str, mode: SearchMode) -> ModeResult:
    docs_of_file: dict[str, list[str]] = {}
    for path, record in cw.catalog.files_in_kb(cw.catalog.get_kb(kb).id).items():
        docs_of_file.setdefault(record.id, []).append(path)
    totals = {"ndcg": 0.0, "r10": 0.0, "r100": 0.0, "mrr": 0.0}
    latencies = []
    for query_id, query in data.queries.items():
        started = time.perf_counter()
        results = cw.search(query, [kb], mode, k=100)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = list(
            dict.fromkeys(d for r in results for d in docs_of_file.get(r.chunk.file_id, []))
        )
        relevant = data.qrels[query_id]
        totals["ndcg"] += ndcg_at_k(ranked, relevant, 10)
        totals["r10"] += recall_at_k(ranked, relevant, 10)
        totals["r100"] += recall_at_k(ranked, relevant, 100)
        totals["mrr"] += mrr_at_k(ranked, relevant, 10)
    n = max(1, len(data.queries))
    return ModeResult(
        totals["ndcg"] / n,
        totals["r10"] / n,
        totals["r100"] / n,
        totals["mrr"] / n,
        percentile(latencies, 50),
        percentile(latencies, 95),
        len(data.queries),
    )


def run_eval(
    cw: Citewell,
    folder: Path,
    split: str,
    modes: Sequence[SearchMode],
    progress: ProgressCallback | None = None,
) -> dict[str, Any]:
    data = load_beir(folder, split)
    ingest = ingest_corpus(cw, data, progress)
    report: dict[str, Any] = {"dataset": data.name, "split": split, "ingest": ingest}
    for mode in modes:
        report[mode.value] = evaluate_mode(cw, data, ingest["kb"], mode).public()
    return report
