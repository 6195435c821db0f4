"""An exiting process waits for its stores' background calls (stores/background.py): a
Lance call still running on a daemon thread when the interpreter finalizes aborts the
process, as a ``citewell check --repair`` did with SIGABRT once its repair was printed."""

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

# A first write starts a removal of old versions in a thread; made to take three seconds
# of Lance calls here, it is still running when the script's main thread ends.
SLOW_REMOVAL = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from citewell.stores.lance import old_versions

    def slow(dataset):
        end = time.monotonic() + 3
        while time.monotonic() < end:
            dataset.cleanup_old_versions(older_than=old_versions.KEEP_FOR)
        Path(sys.argv[2]).write_text("done")

    old_versions.OldVersions._remove = staticmethod(slow)

    if __name__ == "__main__":
        from citewell import Citewell, Settings
        app = Citewell.from_settings(Settings.load(data_dir=Path(sys.argv[1])))
        app.ingest_texts([("a.md", "# Ducks\\n\\nMallards eat duckweed.")], "birds")
        app.close()
        print("main thread done")
    """
)


def test_an_exit_waits_for_a_removal_of_old_versions_under_way(tmp_path: Path):
    script, done = tmp_path / "slow_removal.py", tmp_path / "removal-done"
    script.write_text(SLOW_REMOVAL)
    run = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "data"), str(done)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]  # -6 (SIGABRT) before the fix
    assert "main thread done" in run.stdout
    assert done.read_text() == "done"  # the exit waited for the removal to end


# A training whose build runs in a child for a minute, started on a thread as a big
# training beside writes is; the main thread then ends.
LONG_TRAINING = textwrap.dedent(
    """
    import time
    from citewell.stores.lance.apart import run_apart
    from citewell.stores.lance.training import BackgroundTraining

    class Dataset:
        def get_fragments(self):
            return []

        def count_rows(self):
            return 10_000_000

    if __name__ == "__main__":
        training = BackgroundTraining()
        training.start(Dataset(), lambda dataset, rows: run_apart(time.sleep, 60))
        time.sleep(3)  # the child is under way
        print("main thread done", flush=True)
    """
)


def test_an_exit_stops_a_training_in_a_child_process_instead_of_waiting_for_it(tmp_path):
    script = tmp_path / "long_training.py"
    script.write_text(LONG_TRAINING)
    began = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "main thread done" in run.stdout
    assert time.monotonic() - began < 30  # a pool's child was waited for: 60 s and more
