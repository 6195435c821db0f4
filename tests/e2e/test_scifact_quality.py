"""The acceptance figures of the core engine on the full SciFact test split (minutes).

Runs `citewell eval` exactly as a user would, with default settings, and holds the quality
floors of issue 2. Speed targets live in benchmarks/ (BENCHMARKS.md), not here. The vectors come
from the last run on this machine where the model and embedder are unchanged (tests/kept_vectors).
"""

import json
import subprocess
import sys

import pytest

from tests.conftest import SCIFACT
from tests.kept_vectors import kept_vectors

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLOORS = {"hybrid": 0.70, "bm25": 0.66, "vector": 0.65}


def test_scifact_ndcg_meets_the_floors(tmp_path, onnx_embedder):
    with kept_vectors("scifact", tmp_path, SCIFACT, onnx_embedder):
        report = run_eval(tmp_path)
    print(json.dumps(report, indent=2))
    for mode, floor in FLOORS.items():
        assert report[mode]["ndcg@10"] >= floor, (mode, report[mode])
        assert report[mode]["queries"] == 300


def run_eval(data_dir):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewell",
            "--data-dir",
            str(data_dir),
            "eval",
            "--beir",
            str(SCIFACT),
            "--mode",
            "all",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=3000,
        check=True,
    ).stdout
    return json.loads(out)
