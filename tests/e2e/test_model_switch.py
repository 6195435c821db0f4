"""Changing the embedding model, in process: a real SQLite catalog and job table, real LanceDB
tables per space, the job runner driven one batch at a time. Two fake embedders of different
dimension stand in for two models (FakeHashEmbedder, named as such)."""

from __future__ import annotations

import lancedb
import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.engine.runner import JobRunner
from citewell.errors import ConfigError, EmbeddingError
from citewell.ingest.chunk_rows import sentence_table
from citewell.operations import spaces as spaces_module
from citewell.testing.fakes import FakeHashEmbedder
from citewell.types import ChunkFilter

pytestmark = pytest.mark.e2e

BIRDS = [
    (f"bird-{i}.md", f"# Bird {i}\n\nThe bird number {i} eats seeds{i} and sings song{i}.")
    for i in range(40)
]


@pytest.fixture
def old() -> FakeHashEmbedder:
    return FakeHashEmbedder(64)


@pytest.fixture
def new() -> FakeHashEmbedder:
    return FakeHashEmbedder(32)


@pytest.fixture
def filled(settings: Settings, old: FakeHashEmbedder) -> Settings:
    """A data dir whose active space is the 64-dimensional model, with 40 files."""
    first = Citewell.from_settings(settings, embedder=old)
    first.ingest_texts(BIRDS, "birds", "text/markdown")
    first.close()
    return settings


def runner(app: Citewell, batch_files: int = 64) -> JobRunner:
    return JobRunner(
        app.jobs, app.ingestor, app.storage, batch_files, retry_seconds=0.0, spaces=app.spaces
    )


def run_until_switched(app: Citewell, batch_files: int = 64) -> int:
    work, batches = runner(app, batch_files), 0
    while app.spaces.status() is not None:
        work.run_once()
        batches += 1
        assert batches < 100, "the switch never finished"
    return batches


def _tables_of(app: Citewell) -> list[str]:
    """The active space's tables: its chunks and its chunks' sentence pairs."""
    return [app.spaces.active.id, sentence_table(app.spaces.active.id)]


def top_file(app: Citewell, query: str) -> str:
    return app.search(query, ["birds"], k=1)[0].chunk.file_name


def test_a_new_model_is_built_in_the_background_then_swapped_in(filled, old, new):
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    status = app.spaces.status()
    assert status is not None and status.target.dimension == 32
    assert status.jobs == {"queued": 40} and status.total == 40
    # Until the new space is complete, searches use the old one and its model.
    assert app.store.dimension == 64
    assert top_file(app, "seeds7 song7") == "bird-7.md"
    assert new.calls == []  # the new model has embedded nothing yet
    run_until_switched(app, batch_files=16)
    assert app.store.dimension == 32 and app.spaces.active.record.model_id == new.model_id
    assert app.store.count(ChunkFilter()) == 40
    assert top_file(app, "seeds7 song7") == "bird-7.md"
    assert new.calls[-1] == ["seeds7 song7"]  # the query was embedded by the new model
    ingested = app.ingest_texts([("owl.md", "# Owl\n\nOwls hunt mice at night.")], "birds")
    assert ingested.files_indexed == 1 and app.store.count(ChunkFilter()) == 41


@pytest.mark.parametrize("serving", [True, False])
def test_a_serving_process_loads_the_new_spaces_indexes_when_it_switches(filled, old, new, serving):
    """A process that serves searches warms the space it switches to (its first searches
    would otherwise read each index partition from disk); a worker never does."""
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    if serving:
        app.warm()
    run_until_switched(app)
    search_table = app.spaces.active.store._search
    assert search_table._warmed is serving and search_table.wait(30)
    assert top_file(app, "seeds7 song7") == "bird-7.md"


def test_the_new_space_holds_the_same_chunks_and_embedded_texts(filled, old, new):
    before = Citewell.from_settings(filled, embedder=old)
    chunks_before = before.store.scan(ChunkFilter())
    before.close()
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    run_until_switched(app)
    after = app.store.scan(ChunkFilter())
    assert [c.id for c in after] == [c.id for c in chunks_before]
    assert after == chunks_before  # text, offsets, headings, terms and KBs: all kept
    embedded = {t for call in new.calls for t in call}
    assert "# Bird 3\n\nThe bird number 3 eats seeds3 and sings song3." in embedded


def test_sentence_pairs_move_into_the_new_space_too(settings, old, new):
    pairs = settings.with_values({"sentence_vectors": True})
    first = Citewell.from_settings(pairs, embedder=old)
    first.ingest_texts(BIRDS[:10], "birds", "text/markdown")
    before = first.spaces.active.sentences.scan(ChunkFilter())
    first.close()
    assert len(before) >= 10
    app = Citewell.from_settings(pairs, embedder=new, previous=[old])
    run_until_switched(app)
    after = app.spaces.active.sentences.scan(ChunkFilter())
    assert after == before and app.spaces.active.sentences.dimension == 32
    embedded = {t for call in new.calls for t in call}
    assert {p.text for p in before} <= embedded  # each pair embedded by the new model
    assert top_file(app, "seeds7 song7") == "bird-7.md"
    assert app.check().problems == 0


def test_changes_made_during_the_switch_are_caught_up(filled, old, new):
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    work = runner(app, batch_files=10)
    work.run_once()  # 10 of 40 files re-embedded
    app.ingest_texts([("owl.md", "# Owl\n\nOwls hunt mice at night.")], "birds")
    gone = next(f for f in app.files("birds") if f.name == "bird-0.md")  # done already
    app.delete_file(gone.id)
    moved = next(f for f in app.files("birds") if f.name == "bird-1.md")
    app.create_kb("garden")
    app.add_file("garden", moved.id)
    assert app.store.dimension == 64  # all of it went to the active space
    run_until_switched(app, batch_files=10)
    assert app.store.dimension == 32
    assert top_file(app, "owls hunt mice") == "owl.md"
    assert app.store.count(ChunkFilter(file_ids=(gone.id,))) == 0
    assert app.search("seeds1 song1", ["garden"], k=1)[0].chunk.file_id == moved.id
    assert app.store.count(ChunkFilter()) == 40
    assert app.check().problems == 0


def test_a_restart_during_the_switch_resumes_it(filled, old, new):
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    batch = app.spaces.status().target.batch_id
    runner(app, batch_files=10).run_once()
    app.close()
    again = Citewell.from_settings(filled, embedder=new, previous=[old])
    status = again.spaces.status()
    assert status.target.batch_id == batch and status.total == 40  # no second set of jobs
    assert status.jobs == {"indexed": 10, "queued": 30}
    run_until_switched(again)
    assert again.store.dimension == 32 and again.store.count(ChunkFilter()) == 40
    reopened = Citewell.from_settings(filled, embedder=new, previous=[old])
    assert reopened.spaces.status() is None and reopened.store.dimension == 32


def test_going_back_to_the_old_model_gives_the_switch_up(filled, old, new, monkeypatch):
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    batch = app.spaces.status().target.batch_id
    runner(app, batch_files=10).run_once()
    app.close()
    back = Citewell.from_settings(filled, embedder=old, previous=[new])
    assert back.spaces.status() is None and back.store.dimension == 64
    assert app.jobs.counts(batch) == {"indexed": 10, "cancelled": 30}
    monkeypatch.setattr(spaces_module, "DROP_AFTER", 0.0)
    back.spaces.drop_retired()
    tables = lancedb.connect(str(filled.storage.data_dir / "lancedb")).list_tables().tables
    assert tables == _tables_of(back)  # the half-built space is gone
    assert back.spaces.cache.get(new.model_id, ["x"]) == {}


def test_the_old_space_and_its_cached_vectors_go_after_the_switch(filled, old, new, monkeypatch):
    app = Citewell.from_settings(filled, embedder=new, previous=[old])
    old_id = app.spaces.active.id
    run_until_switched(app)
    retired = app.spaces.registry.retired()
    assert [r.id for r in retired] == [old_id]
    app.spaces.drop_retired()  # a query may still be running in it: kept for a minute
    tables = lancedb.connect(str(filled.storage.data_dir / "lancedb")).list_tables().tables
    assert old_id in tables
    monkeypatch.setattr(spaces_module, "DROP_AFTER", 0.0)
    app.spaces.drop_retired()
    tables = lancedb.connect(str(filled.storage.data_dir / "lancedb")).list_tables().tables
    assert tables == _tables_of(app) and app.spaces.registry.retired() == []
    assert app.embedder.cache.forget(old.model_id) == 0  # already forgotten


class FlakyEmbedder(FakeHashEmbedder):
    """Fails while ``down`` is set, like an embedding server that is unreachable."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.down = True

    def embed(self, texts, kind="document"):
        if self.down and kind == "document":
            raise EmbeddingError("the embedding server is down")
        return super().embed(texts, kind)


def test_a_failing_new_model_stalls_the_switch_until_retried(filled, old):
    flaky = FlakyEmbedder(32)
    settings = filled.with_values({"job_max_attempts": 1})
    app = Citewell.from_settings(settings, embedder=flaky, previous=[old])
    work = runner(app)
    work.run_once()
    work.run_once()
    status = app.spaces.status()
    assert status.stalled and status.jobs == {"failed": 40}
    assert app.store.dimension == 64 and top_file(app, "seeds5 song5") == "bird-5.md"
    flaky.down = False
    for job in app.jobs.find(batch_id=status.target.batch_id):
        app.jobs.retry(job.id)
    run_until_switched(app)
    assert app.store.dimension == 32 and app.store.count(ChunkFilter()) == 40


def test_an_old_space_the_settings_cannot_rebuild_is_a_clear_error(filled, new):
    # The old space was made by an embedder passed in code; the kept settings name onnx.
    with pytest.raises(ConfigError, match="Start once with the settings"):
        Citewell.from_settings(filled, embedder=new)


def test_only_switching_processes_start_a_switch_or_run_its_jobs(filled, old, new, monkeypatch):
    reader = Citewell.from_settings(filled, embedder=new, previous=[old], switch_models=False)
    assert reader.spaces.status() is None and reader.store.dimension == 64
    assert reader.spaces.registry.building() is None  # nothing was started
    assert top_file(reader, "seeds2 song2") == "bird-2.md"
    server = Citewell.from_settings(filled, embedder=new, previous=[old])
    batch = server.spaces.status().target.batch_id
    runner(reader).run_once()  # a CLI's worker leaves re-embed jobs to the server
    assert server.jobs.counts(batch) == {"queued": 40}
    run_until_switched(server)
    monkeypatch.setattr(spaces_module, "REFRESH_EVERY", 0.0)
    assert top_file(reader, "seeds2 song2") == "bird-2.md"  # it follows the other's switch
    assert reader.store.dimension == 32 and reader.ingestor.store is reader.store
    follower = Citewell.from_settings(filled, embedder=old, previous=[new], switch_models=False)
    assert follower.store.dimension == 32  # the switch is not undone by other settings


def test_a_cli_command_with_other_settings_warns_and_changes_nothing(tmp_path):
    import json
    import os
    import subprocess
    import sys

    from tests.fake_servers import FakeService, serve

    data = tmp_path / "data"
    command = [sys.executable, "-m", "citewell", "--data-dir", str(data)]
    note = tmp_path / "note.md"
    note.write_text("# Herons\n\nGrey herons stand still in shallow water.")
    subprocess.run([*command, "ingest", str(note), "--kb", "k"], check=True, capture_output=True)
    with serve(FakeService(dimension=24)) as url:
        env = {
            **os.environ,
            "CITEWELL_EMBEDDING_ENGINE": "openai",
            "CITEWELL_EMBEDDING_BASE_URL": url + "/v1",
            "CITEWELL_EMBEDDING_MODEL": "other",
        }
        result = subprocess.run(
            [*command, "search", "herons", "--kb", "k", "--json"],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert "Start `citewell serve` with these settings to switch models" in result.stderr
    assert json.loads(result.stdout)[0]["file"] == "note.md"
    app = Citewell.from_settings(Settings.load(data_dir=data), switch_models=False)
    assert app.spaces.registry.building() is None and app.jobs.find() == []
