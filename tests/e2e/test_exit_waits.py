"""An exiting process waits for its stores' background calls (stores/background.py): a
Lance call still running on a daemon thread when the interpreter finalizes aborts the
process, as a ``citewell check --repair`` did with SIGABRT once its repair was printed."""

import subprocess
import sys
import textwrap
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
