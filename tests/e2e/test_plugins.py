"""A third party's plug-in, installed with pip as a user would (tests/plugin_example: an
embedder, a loader for a new format and a source, one entry point each), drives Citewell
with no change to it; each of its parts passes its role's shipped conformance suite."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from citewell.sources.registry import SourceRequest
from citewell.testing.embedders import EmbedderConformance
from citewell.testing.loaders import LoaderConformance, Sample
from citewell.testing.sources import SourceConformance

pytestmark = pytest.mark.e2e
EXAMPLE = Path(__file__).parents[1] / "plugin_example"
NOTE = b"Title: Mallards\nMallards leave the marsh in October and return in March.\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The plug-in, pip-installed into a folder of its own (as into a virtualenv)."""
    work = tmp_path_factory.mktemp("plugin")
    shutil.copytree(EXAMPLE, work / "src")  # the build's leftovers stay out of the checkout
    target = work / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "--target", str(target), str(work / "src")],
        check=True,
        timeout=300,
    )
    assert (target / "citewell_example-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def run(site, *args, **env):
    return subprocess.run(
        [sys.executable, *args],
        env={**os.environ, "PYTHONPATH": str(site), **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def citewell(site, data_dir, *args):
    result = run(
        site,
        "-m",
        "citewell",
        "--data-dir",
        str(data_dir),
        *args,
        CITEWELL_EMBEDDING_ENGINE="example-hash",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_each_role_finds_the_plug_in_through_its_entry_point(site):
    probe = (
        "from citewell.embedders import EMBEDDERS; from citewell.loaders import LOADERS;"
        "from citewell.sources.registry import SOURCES;"
        "print(EMBEDDERS.plugins(), LOADERS.plugins(), SOURCES.plugins())"
    )
    result = run(site, "-c", probe)
    assert result.stdout.split() == ["('example-hash',)", "('note',)", "('lines',)"]


def test_citewell_ingests_and_searches_with_the_plug_in(site, tmp_path):
    data = tmp_path / "data"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "mallards.note").write_bytes(NOTE)  # a format only the plug-in reads
    (tmp_path / "facts.txt").write_text("Teal are small ducks.\n\nGeese fly in a V.\n")
    out = json.loads(citewell(site, data, "ingest", str(docs), "--kb", "birds", "--json"))
    assert out["files_indexed"] == 1
    lines = citewell(site, data, "ingest", "--source", "lines", str(tmp_path / "facts.txt"))
    assert lines.startswith("2 files: 2 indexed")
    found = json.loads(
        citewell(site, data, "search", "when do mallards return", "--kb", "birds", "--json")
    )
    top = found[0] if isinstance(found, list) else found["results"][0]
    assert "return in March" in json.dumps(top)
    space = citewell(site, data, "config")
    assert "example-hash" in space


def test_without_the_plug_in_its_names_are_refused_with_the_fix(tmp_path):
    env = {**os.environ, "CITEWELL_EMBEDDING_ENGINE": "example-hash"}
    result = subprocess.run(
        [sys.executable, "-m", "citewell", "--data-dir", str(tmp_path), "kb", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "citewell.embedders" in result.stderr and "'onnx'" in result.stderr


@pytest.fixture
def example(site):
    """The plug-in's module, imported from its file: putting its folder on sys.path would
    let this process's registries pick it up for the tests that follow."""
    path = site / "citewell_example" / "__init__.py"
    spec = importlib.util.spec_from_file_location("citewell_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestExampleEmbedder(EmbedderConformance):
    @pytest.fixture
    def embedder(self, example):
        return example.build_embedder(None)


class TestExampleLoader(LoaderConformance):
    @pytest.fixture
    def loader(self, example):
        return example.NoteLoader()

    @pytest.fixture
    def sample(self):
        return Sample(NOTE, "mallards.note", "return in March")


class TestExampleSource(SourceConformance):
    @pytest.fixture
    def source(self, example):
        return example.LinesSource(None)

    @pytest.fixture
    def request_(self, tmp_path):
        (tmp_path / "facts.txt").write_text("Teal are small ducks.\n\nGeese fly in a V.\n")
        return SourceRequest(str(tmp_path / "facts.txt"))
