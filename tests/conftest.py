"""Shared fixtures. The real offline embedder is loaded once per session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from citewell.app import Citewell
from citewell.config import Settings, env_names
from citewell.embedders import OnnxEmbedder
from citewell.stores.memory import kb_copies, keeper

# Tests define their own settings: none may leak in from the environment running them
# (an operator's OPENAI_API_KEY, PORT, CHUNK_SIZE…).
for _name, _info in Settings.fields().items():
    for _env in env_names(_name, _info):
        os.environ.pop(_env, None)
os.environ.pop("CITEWELL_CONFIG", None)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("CITEWELL_SHARED_DATA", REPO.parent / "shared" / "data"))
DOCS = SHARED_DATA / "docs"
SCIFACT = SHARED_DATA / "scifact"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--database",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="where servers built by the tests keep their state: each data dir gets its own "
        "fresh PostgreSQL database (catalog, jobs, users, chunks) with 'postgresql'",
    )
    parser.addoption(
        "--embedded-only",
        action="store_true",
        help="leave out every test that needs PostgreSQL (deselected, not skipped): the "
        "fast loop, scripts/test --fast",
    )


# The tier of a test is its folder; a marker of that name selects it (-m "not api").
TIERS = ("unit", "conformance", "api", "e2e", "browser")


# The tests that take minutes. pytest-xdist hands tests out in collection order, so these go
# first: each worker starts one while the other works through the rest, instead of one of
# them starting at the end and running alone (SciFact alone takes ~11 minutes here).
LONGEST_FIRST = ("test_scifact_quality.py", "test_schema_fuzz.py", "test_open_webui.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = Path(str(item.path)).relative_to(REPO / "tests").parts[0]
        if tier in TIERS:
            item.add_marker(tier)
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep order
    if not config.getoption("--embedded-only"):
        return
    kept, left = [], []
    for item in items:
        needs_postgres = "postgres" in getattr(item, "fixturenames", ()) or "postgresql" in (
            getattr(getattr(item, "callspec", None), "id", "") or ""
        )
        (left if needs_postgres else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


@pytest.fixture(scope="session", autouse=True)
def copies_made_at_normal_priority() -> Iterator[None]:
    """In-memory copies are made at normal priority in tests. At the lowest (nice 19, as a
    server makes them), a loaded machine (two test workers and PostgreSQL on two cores) left
    the thread making a five-row copy without a core past a test's 20 s wait: a fast-tier
    run failed so, and with two busy loops beside them the shared-copy tests took 173 s
    instead of 16."""
    with pytest.MonkeyPatch.context() as patch:
        for module in (keeper, kb_copies):
            patch.setattr(module, "lower_priority", lambda: None)
        yield


@pytest.fixture(scope="session", autouse=True)
def database_per_data_dir(request: pytest.FixtureRequest) -> Iterator[None]:
    """With ``--database postgresql``: every ``Settings.load(data_dir=…)`` without a
    database URL gets one, a fresh database per data dir (the same one when a test opens
    the same data dir again, as a restart does). The API tier runs this way in CI."""
    if request.config.getoption("--database") != "postgresql":
        yield
        return
    server = request.getfixturevalue("postgres")
    urls: dict[Path, str] = {}
    load = Settings.load.__func__  # type: ignore[attr-defined]

    def load_with_database(cls, config_file=None, **overrides):  # type: ignore[no-untyped-def]
        if overrides.get("data_dir") and not overrides.get("database_url"):
            place = Path(overrides["data_dir"]).resolve()
            overrides["database_url"] = urls.get(place) or urls.setdefault(
                place, server.create_database()
            )
        return load(cls, config_file, **overrides)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Settings, "load", classmethod(load_with_database))
        yield


@pytest.fixture(scope="session")
def shared_docs() -> Path:
    assert DOCS.is_dir(), f"evaluation fixtures missing at {DOCS}; set CITEWELL_SHARED_DATA"
    return DOCS


@pytest.fixture(scope="session")
def onnx_embedder() -> OnnxEmbedder:
    return OnnxEmbedder(threads=2)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.load(data_dir=tmp_path / "data")


@pytest.fixture
def app(settings: Settings, onnx_embedder: OnnxEmbedder) -> Citewell:
    return Citewell.from_settings(settings, embedder=onnx_embedder)


@pytest.fixture(scope="session")
def postgres() -> Iterator[object]:
    """A real PostgreSQL + pgvector on 127.0.0.1 for the whole session (testing/postgres.py)."""
    from citewell.testing.postgres import EmbeddedPostgres

    # One test process holds many apps, each with its own database and pool (5 idle
    # connections and a listener each, up to 16 engines cached): PostgreSQL's default of
    # 100 connections is too few for the API tier's PostgreSQL pass.
    server = EmbeddedPostgres(settings={"max_connections": "300"})
    server.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty database of each backend: a SQLite file, or a fresh PostgreSQL database."""
    from citewell.db import sqlite_engine
    from citewell.db.engine import url_engine

    if request.param == "sqlite":
        engine = sqlite_engine(tmp_path / "citewell.sqlite")
    else:
        engine = url_engine(request.getfixturevalue("postgres").create_database())
    yield engine
    engine.dispose()
