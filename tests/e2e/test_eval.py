"""`citewell eval` on a small slice of SciFact (the full run is in test_scifact_quality)."""

import json
import random
import subprocess
import sys

import pytest

from tests.conftest import SCIFACT
from tests.kept_vectors import kept_vectors

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def mini_beir(tmp_path_factory):
    """Every test-split query with its relevant docs, plus 300 distractors."""
    folder = tmp_path_factory.mktemp("mini-scifact")
    qrels = (SCIFACT / "qrels" / "test.tsv").read_text().splitlines()
    header, rows = qrels[0], qrels[1:60]
    wanted = {r.split("\t")[1] for r in rows}
    queries = {r.split("\t")[0] for r in rows}
    corpus = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").open()]
    keep = [d for d in corpus if d["_id"] in wanted]
    keep += random.Random(0).sample([d for d in corpus if d["_id"] not in wanted], 300)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in keep))
    qs = [json.loads(line) for line in (SCIFACT / "queries.jsonl").open()]
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps(q) for q in qs if q["_id"] in queries)
    )
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("\n".join([header, *rows]) + "\n")
    return folder


def run_eval(data_dir, folder):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewell",
            "--data-dir",
            str(data_dir),
            "eval",
            "--beir",
            str(folder),
            "--mode",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    ).stdout
    return json.loads(out)


def test_eval_reports_every_metric_and_reuses_the_index(tmp_path, mini_beir, onnx_embedder):
    with kept_vectors("mini-scifact", tmp_path, SCIFACT, onnx_embedder):
        first = run_eval(tmp_path, mini_beir)
    for mode in ("hybrid", "vector", "bm25"):
        assert set(first[mode]) >= {
            "ndcg@10",
            "recall@10",
            "recall@100",
            "mrr@10",
            "latency_ms_p50",
            "latency_ms_p95",
        }
        assert 0.5 < first[mode]["ndcg@10"] <= 1.0, (mode, first[mode])
    assert first["ingest"]["reused"] is False and first["ingest"]["chunks_per_s"] > 0
    second = run_eval(tmp_path, mini_beir)
    assert second["ingest"]["reused"] is True
    assert second["hybrid"]["ndcg@10"] == first["hybrid"]["ndcg@10"]
