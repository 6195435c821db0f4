"""`citewell check`: each kind of disagreement between the catalog, the chunk store and the
stored files is found, and --repair makes them agree (a real LanceDB, a real SQLite)."""

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import replace

import pytest

from citewell.types import ChunkFilter

pytestmark = pytest.mark.e2e


@pytest.fixture
def filled(app):
    app.ingest_texts(
        [
            ("ducks.md", "# Ducks\n\nMallards eat duckweed and snails in the marsh."),
            ("geese.md", "# Geese\n\nGreylag geese graze on grass near the river."),
        ],
        "birds",
    )
    return app


def test_a_fresh_ingest_is_consistent(filled):
    report = filled.check()
    assert report.problems == 0 and report.repairs == []


def test_missing_chunks_are_rebuilt_from_the_original(filled):
    ducks = next(f for f in filled.files("birds") if f.name == "ducks.md")
    filled.store.delete(ChunkFilter(file_ids=(ducks.id,)))
    report = filled.check()
    assert report.missing_chunks == {ducks.id: (ducks.chunk_count, 0)}
    repaired = filled.check(repair=True)
    assert "re-indexed" in repaired.repairs[0]
    assert filled.check().problems == 0
    hits = filled.search("What do mallards eat?", ["birds"], k=1)
    assert hits[0].chunk.file_id == ducks.id and hits[0].kb_id is not None


def test_orphan_chunks_and_stored_files_are_removed(filled):
    some = filled.store.get([filled.search("geese", ["birds"], k=1)[0].chunk.id])[0]
    stray = replace(some, id="f" * 32, file_id="0" * 32)
    vector = filled.embedder.embed([stray.text], "document")[0]
    filled.store.upsert([replace(stray, vector=tuple(float(x) for x in vector))])
    filled.storage.put("1" * 32, b"lost", "lost")
    assert filled.check().orphan_stored == []  # as young as an ingest in flight
    hours_ago = time.time() - 2 * 3600  # as a killed worker's would be by now
    for blob in (filled.settings.storage.data_dir / "files").glob("1" * 32 + ".*"):
        os.utime(blob, (hours_ago, hours_ago))
    report = filled.check()
    assert report.orphan_chunks == {"0" * 32: 1} and report.orphan_stored == ["1" * 32]
    filled.check(repair=True)
    assert filled.check().problems == 0
    assert filled.store.count(ChunkFilter(file_ids=("0" * 32,))) == 0
    assert filled.storage.original("1" * 32) is None


def test_a_file_in_no_knowledge_base_is_deleted(filled):
    geese = next(f for f in filled.files("birds") if f.name == "geese.md")
    filled.catalog.unlink(filled.kb_id("birds"), geese.id)
    assert filled.check().files_in_no_kb == [geese.id]
    filled.check(repair=True)
    assert filled.catalog.get_file(geese.id) is None
    assert filled.store.count(ChunkFilter(file_ids=(geese.id,))) == 0
    assert filled.check().problems == 0


def test_the_cli_exits_1_until_repaired(tmp_path, filled):
    ducks = next(f for f in filled.files("birds") if f.name == "ducks.md")
    filled.store.delete(ChunkFilter(file_ids=(ducks.id,)))
    filled.close()

    def run(*args):
        data = str(filled.settings.storage.data_dir)
        cmd = [sys.executable, "-m", "citewell", "--data-dir", data, "check", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)

    found = run("--json")
    assert found.returncode == 1, found.stderr
    assert json.loads(found.stdout)["missing_chunks"][ducks.id] == [ducks.chunk_count, 0]
    assert run("--repair").returncode == 0
    clean = run()
    assert clean.returncode == 0 and "Consistent" in clean.stdout
    assert "chunks: 2, vector search: exact (in memory)" in clean.stdout


def test_stuck_jobs_are_queued_again_and_stale_uploads_removed(filled):
    from citewell.operations.check import ConsistencyCheck

    ducks, geese = filled.enqueue_uploads("birds", [("a.md", b"# A\n\na"), ("b.md", b"# B\n\nb")])
    filled.jobs.claim(1)  # the first is taken by a worker that then died
    filled.jobs.cancel(geese.id)  # the second was cancelled, but its upload is still staged
    check = ConsistencyCheck(
        filled.catalog, filled.store, filled.storage, filled.ingestor, filled.jobs, -1
    )
    report = check.run()
    assert report.stuck_jobs == [ducks.id] and report.orphan_staged == [geese.id]
    check.run(repair=True)
    assert filled.jobs.get(ducks.id).state == "queued"
    assert filled.storage.staged(geese.id) is None
    assert filled.check().problems == 0


def test_the_vector_index_and_its_recall_are_reported_and_low_recall_is_repaired(tmp_path):
    from citewell import Citewell, Settings

    app = Citewell.from_settings(Settings.load(data_dir=tmp_path, vector_index_min_rows=1))
    texts = [(f"n{i}.md", f"# Note {i}\n\nItem {i} is about topic {i % 5}.") for i in range(60)]
    app.ingest_texts(texts, "notes")
    report = app.check(recall_samples=10)
    assert report.index is not None and report.index.vector_index == "IvfSq"
    assert report.index.rows == 60 and report.index.trained_rows == 60
    assert report.index.recall_at_50 is not None and report.index.recall_at_50 >= 0.9
    assert not report.low_recall and report.problems == 0

    worse = replace(report.index, recall_at_50=0.5)  # as an index with decayed recall reports
    app.store.health = lambda samples: worse
    low = app.check(recall_samples=10)
    assert low.low_recall and low.problems == 1
    retrained = []
    app.store.rebuild_vector_index = lambda: retrained.append(True)
    assert "trained the vector index anew" in app.check(repair=True).repairs
    assert retrained == [True]
    app.close()


def test_rows_a_stopped_import_left_outside_the_indexes_are_reported_and_taken_in(
    tmp_path, monkeypatch
):
    from citewell import Citewell, Settings
    from citewell.auth.access import Access
    from citewell.engine.scoped import Scoped
    from citewell.services.ingest import IngestService

    app = Citewell.from_settings(Settings.load(data_dir=tmp_path, vector_index_min_rows=1))
    text = "Mallards eat duckweed."
    vector = [float(x) for x in app.embedder.embed([text], "document")[0]]
    path = tmp_path / "chunks.jsonl"
    path.write_text(json.dumps({"file": "a.md", "text": text, "vector": vector}) + "\n")

    def interrupted(self):
        raise KeyboardInterrupt  # ^C once every row is written, before the indexes

    with monkeypatch.context() as patched:
        patched.setattr(type(app.ingestor.writer), "optimize", interrupted)
        with pytest.raises(KeyboardInterrupt):
            IngestService(Scoped(app, Access.everything())).import_chunks(path, "birds")
    app.close()

    def run(*args):
        cmd = [sys.executable, "-m", "citewell", "--data-dir", str(tmp_path), "check", *args]
        env = {**os.environ, "CITEWELL_VECTOR_INDEX_MIN_ROWS": "1"}
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=300, env=env, check=False
        )

    found = run()
    assert found.returncode == 1, found.stderr
    assert "chunks: 1, vector search: none" in found.stdout
    assert "indexes behind: 1 rows are outside the indexes" in found.stdout
    repaired = run("--repair")
    assert "repaired: took 1 rows into the chunk indexes they lacked" in repaired.stdout
    clean = run("--json")
    assert clean.returncode == 0, clean.stdout
    health = json.loads(clean.stdout)["index"]
    assert (health["vector_index"], health["rows_behind"]) == ("IvfSq", 0)


def test_check_says_what_memory_a_copy_of_a_big_table_takes(filled):
    filled.close()

    def run(*args, **env):
        data = str(filled.settings.storage.data_dir)
        cmd = [sys.executable, "-m", "citewell", "--data-dir", data, "check", *args]
        environment = {**os.environ, "CITEWELL_VECTOR_INDEX_MIN_ROWS": "2", **env}
        return subprocess.run(
            cmd, capture_output=True, text=True, timeout=300, check=False, env=environment
        )

    # Two chunks past a threshold of two: a "big" table, with no memory allowed for a copy.
    # Written under the default threshold, it has no vector index yet: --repair trains it.
    repaired = run("--repair", CITEWELL_TABLE_COPY_MB="0")
    assert "repaired: took 2 rows into the chunk indexes" in repaired.stdout, repaired.stdout
    without = run(CITEWELL_TABLE_COPY_MB="0")
    assert without.returncode == 0, without.stderr
    assert re.search(
        r"in-memory copy: about 1 MB for 2 chunks \([\d,]+ MB a million\), one copy for the "
        r"machine's API processes; table_copy_mb allows 0",
        without.stdout,
    ), without.stdout
    assert "table_copy_mb = 1, where the machine has that memory" in without.stdout
    own = run(CITEWELL_TABLE_COPY_MB="0", CITEWELL_TABLE_COPY_SHARED="false")
    assert "in each API process" in own.stdout
    assert "table_copy_mb = 1, where each API process has that memory" in own.stdout
    by_default = run()  # "auto": a fifth of this machine's memory is plenty for two chunks
    assert by_default.returncode == 0 and "too small" not in by_default.stdout
    assert "in-memory copy: about 1 MB for 2 chunks" in by_default.stdout
