"""SIGKILL the server while it ingests queued files, restart it, repeat; every file must end
indexed exactly once (citewell.testing.crash_run, a smaller run than benchmarks.sigkill_ingest:
1,000 files and 10 kills)."""

import pytest

from citewell.testing.crash_run import run

pytestmark = pytest.mark.e2e


def test_killed_and_restarted_servers_index_every_file_once(tmp_path):
    result = run(files=300, kills=4, seed=3, data=tmp_path / "data")
    assert result["kills"] >= 1, result  # the run was interrupted at least once
    assert result["ok"], result
