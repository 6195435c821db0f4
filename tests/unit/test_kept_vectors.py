"""The SciFact runs' kept vectors (tests/kept_vectors.py) are used only while they are right."""

import json

import numpy as np
import pytest

from citewell.embedders.cache import EmbeddingCache
from tests import kept_vectors as kept

MODEL = "onnx:all-MiniLM-L6-v2:int8"


@pytest.fixture
def beir(tmp_path):
    folder = tmp_path / "beir"
    folder.mkdir()
    docs = [{"_id": str(i), "title": f"Title {i}", "text": f"Abstract {i} " * 40} for i in range(3)]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs))
    return folder


@pytest.fixture
def keep_in(tmp_path, monkeypatch):
    folder = tmp_path / "kept"
    monkeypatch.setenv("CITEWELL_TEST_VECTORS", str(folder))
    # The real encoder's probes are checked once, below; here fixed unit vectors stand in.
    fixed = np.eye(5, 8, dtype=np.float32)
    monkeypatch.setattr(kept, "probe_vectors", lambda texts, embedder: fixed[: len(texts)])
    return folder


def test_the_real_encoders_probes_agree_with_themselves(beir, onnx_embedder):
    """Else the kept vectors would never be used: the batches differ from run to run."""
    texts = kept.probe_texts(beir)
    docs, queries = texts[:-2], texts[-2:]
    first = kept.probe_vectors(texts, onnx_embedder)
    second = kept.probe_vectors([*docs[::-1], *queries], onnx_embedder)  # other batches
    second = np.vstack([second[:-2][::-1], second[-2:]])
    assert first.shape == (len(texts), 384)
    assert (np.sum(first * second, axis=1) >= kept.SAME_VECTOR).all()


def run(data_dir, beir, vector):
    """One 'run': what it finds in its cache, then the one vector it writes."""
    with kept.kept_vectors("demo", data_dir, beir, embedder=None):
        cache = EmbeddingCache(data_dir / "embeddings.sqlite")
        found = cache.get(MODEL, ["h"])
        cache.put(MODEL, ["h"], np.full((1, 4), vector, dtype=np.float32))
        cache.close()
    return found


def test_a_run_starts_from_the_last_runs_vectors(tmp_path, beir, keep_in):
    assert run(tmp_path / "one", beir, 1.0) == {}
    found = run(tmp_path / "two", beir, 2.0)
    assert found["h"].tolist() == [1.0] * 4
    assert sorted(p.suffix for p in keep_in.iterdir()) == [".npy", ".sqlite"]  # no .partial


def test_vectors_the_embedder_no_longer_makes_are_dropped(tmp_path, beir, keep_in):
    run(tmp_path / "one", beir, 1.0)
    (probes,) = keep_in.glob("*.npy")
    moved = np.load(probes)
    moved[0] = np.roll(moved[0], 1)  # as a changed pooling or model would
    np.save(probes, moved)
    assert run(tmp_path / "two", beir, 2.0) == {}


def test_another_models_cache_is_never_used(tmp_path, beir, keep_in, monkeypatch):
    run(tmp_path / "one", beir, 1.0)
    monkeypatch.setattr(kept, "model_fingerprint", lambda: "another-model")
    assert run(tmp_path / "two", beir, 2.0) == {}
    assert len(list(keep_in.glob("demo-*.sqlite"))) == 1  # the old model's file is gone


def test_off_keeps_nothing(tmp_path, beir, keep_in, monkeypatch):
    monkeypatch.setenv("CITEWELL_TEST_VECTORS", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert run(tmp_path / "one", beir, 1.0) == {}
    assert run(tmp_path / "two", beir, 2.0) == {}
    assert not (tmp_path / "xdg").exists()


def test_a_folder_that_cannot_be_written_costs_time_not_the_test(
    tmp_path, beir, keep_in, monkeypatch
):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("CITEWELL_TEST_VECTORS", str(blocked / "kept"))
    with pytest.warns(UserWarning, match="not kept"):
        assert run(tmp_path / "one", beir, 1.0) == {}


def test_a_damaged_cache_is_not_used(tmp_path, beir, keep_in):
    run(tmp_path / "one", beir, 1.0)
    (cache,) = keep_in.glob("*.sqlite")
    cache.write_bytes(b"not a database" * 100)
    with pytest.warns(UserWarning, match="not used"):
        assert run(tmp_path / "two", beir, 2.0) == {}
    assert run(tmp_path / "three", beir, 3.0)["h"].tolist() == [2.0] * 4  # kept anew
