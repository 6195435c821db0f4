"""The API tier runs twice in CI: on the embedded default and with ``--database postgresql``.
This test proves each pass really keeps its servers' state where it says."""

from citewell.app import Citewell
from citewell.config import Settings


def test_servers_keep_their_state_in_the_database_asked_for(request, tmp_path, onnx_embedder):
    asked = request.config.getoption("--database")
    settings = Settings.load(data_dir=tmp_path / "data")
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    kb = app.create_kb("where")
    app.ingest_texts([("a.md", "# Where\n\nThe state lives in one place.")], kb.id)
    store = type(app.store).__name__
    if asked == "postgresql":
        assert settings.storage.database_url.startswith("postgresql://")
        assert store == "PostgresChunkStore"
        assert not (tmp_path / "data" / "lancedb").exists()
        # The same data dir opened again (a restart) finds the same database.
        assert (
            Settings.load(data_dir=tmp_path / "data").storage.database_url
            == settings.storage.database_url
        )
    else:
        assert not settings.storage.database_url and store == "LanceChunkStore"
    reopened = Citewell.from_settings(Settings.load(data_dir=tmp_path / "data"), onnx_embedder)
    assert [f.name for f in reopened.files(kb.id)] == ["a.md"]
