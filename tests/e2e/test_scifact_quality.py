"""The acceptance figures of the core engine on the full SciFact test split (minutes).

Runs `citewell eval` exactly as a user would, with default settings, and holds the quality
floors of issue 2. Speed targets live in benchmarks/ (BENCHMARKS.md), not here.
"""

import json
import subprocess
import sys

import pytest

from tests.conftest import SCIFACT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FLOORS = {"hybrid": 0.70, "bm25": 0.66, "vector": 0.65}


def test_scifact_ndcg_meets_the_floors(tmp_path):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewell",
            "--data-dir",
            str(tmp_path),
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
    report = json.loads(out)
    print(json.dumps(report, indent=2))
    for mode, floor in FLOORS.items():
        assert report[mode]["ndcg@10"] >= floor, (mode, report[mode])
        assert report[mode]["queries"] == 300
