"""The scratch folders of LanceDB's vector builds: TMPDIR moved for the build, and the
shuffle directories Lance 9 leaves behind (lance-format/lance#8992) removed after it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from citewell.stores.lance.scratch import BuildScratch


def leave_shuffle(folder: Path, name: str = ".tmpA") -> Path:
    """What a Lance IVF build leaves in its temp dir."""
    leaked = folder / name
    leaked.mkdir()
    for file in ("shuffle_data.lance", "shuffle_data.spill", "shuffle_offsets.lance"):
        (leaked / file).write_bytes(b"x")
    return leaked


def test_a_build_runs_with_tmpdir_in_the_process_folder_and_its_shuffles_are_removed(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "system"))
    scratch = BuildScratch(tmp_path / "scratch")
    with scratch.vector_build():
        folder = Path(os.environ["TMPDIR"])
        assert folder == tmp_path / "scratch" / str(os.getpid())
        leave_shuffle(folder)
        other = folder / ".tmpOther"  # a temp dir of another thread, made meanwhile
        other.mkdir()
        (other / "upload.part").write_bytes(b"y")
    assert os.environ["TMPDIR"] == str(tmp_path / "system")
    assert [p.name for p in folder.iterdir()] == [".tmpOther"]
    assert (other / "upload.part").exists()


def test_tmpdir_unset_before_is_set_back_to_the_system_temp_dir(tmp_path, monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    with BuildScratch(tmp_path).vector_build():
        assert os.environ["TMPDIR"] == str(tmp_path / str(os.getpid()))
    assert os.environ["TMPDIR"] == tempfile.gettempdir()


def test_builds_at_once_share_the_folder_until_the_last_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "system"))
    first, second = BuildScratch(tmp_path / "a"), BuildScratch(tmp_path / "b")
    outer = first.vector_build()
    outer.__enter__()
    folder = Path(os.environ["TMPDIR"])
    with second.vector_build():  # another table's delta beside a training
        assert Path(os.environ["TMPDIR"]) == folder  # the first build's folder
        leave_shuffle(folder, ".tmpSecond")
    assert Path(os.environ["TMPDIR"]) == folder  # the training still runs
    assert (folder / ".tmpSecond").exists()  # not removed under the running build
    leave_shuffle(folder, ".tmpFirst")
    outer.__exit__(None, None, None)
    assert list(folder.iterdir()) == []
    assert os.environ["TMPDIR"] == str(tmp_path / "system")


def test_a_failed_build_still_sets_tmpdir_back_and_removes_its_shuffles(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "system"))
    scratch = BuildScratch(tmp_path)
    try:
        with scratch.vector_build():
            leave_shuffle(scratch.folder)
            raise RuntimeError("no space left on device")
    except RuntimeError:
        pass
    assert os.environ["TMPDIR"] == str(tmp_path / "system")
    assert list(scratch.folder.iterdir()) == []


def test_folders_of_stopped_processes_are_removed_and_running_ones_kept(tmp_path):
    stopped = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                             capture_output=True, text=True, check=True)  # fmt: skip
    dead = tmp_path / stopped.stdout.strip()
    (tmp_path / "x").mkdir()  # not a process's folder
    dead.mkdir()
    leave_shuffle(dead)
    mine = tmp_path / str(os.getpid())
    mine.mkdir()
    parent = tmp_path / str(os.getppid())  # running (pytest's parent)
    parent.mkdir()
    assert BuildScratch(tmp_path).remove_dead() == 1
    assert not dead.exists()
    assert mine.exists() and parent.exists() and (tmp_path / "x").exists()
