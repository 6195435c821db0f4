"""One embedder suite, run against the offline ONNX model and both HTTP wire formats."""

import numpy as np
import pytest

from citewell.config import Settings
from citewell.embedders import (
    EMBEDDERS,
    CachedEmbedder,
    EmbeddingCache,
    OpenAIEmbedder,
)
from citewell.errors import EmbeddingError
from citewell.testing.embedders import EmbedderConformance
from tests.fake_servers import FakeService, serve

pytestmark = pytest.mark.conformance


@pytest.fixture(scope="module")
def service():
    fake = FakeService()
    with serve(fake) as url:
        fake.url = url
        yield fake


class TestBuiltInEmbedders(EmbedderConformance):
    """Every built-in passes the role's shipped suite: the offline ONNX model and both HTTP
    wire formats (against the fake)."""

    @pytest.fixture(params=["onnx", "openai", "ollama"])
    def embedder(self, request, onnx_embedder, service, tmp_path):
        if request.param == "onnx":
            return onnx_embedder
        base = service.url + "/v1" if request.param == "openai" else service.url
        settings = Settings.load(
            data_dir=tmp_path,
            embedding_engine=request.param,
            embedding_base_url=base,
            embedding_model="nomic-embed-text",
            embedding_batch_size=2,
        )
        return EMBEDDERS.get(request.param)(settings.embedding)


TEXTS = [
    "The CEO of Example Corp is John Doe",
    "Who is the CEO of Example Corp?",
    "The capital of France is Paris",
    "Paris",
]


def test_onnx_matches_known_semantics(onnx_embedder):
    v = onnx_embedder.embed(TEXTS[:3])
    assert v[0] @ v[1] == pytest.approx(0.86, abs=0.03)  # seed 002 reports 0.86
    assert v[1] @ v[2] < 0.2


def test_openai_wire_format_and_auth(service):
    service.requests.clear()
    OpenAIEmbedder(service.url + "/v1", "m", api_key="secret", batch_size=3).embed(TEXTS)
    paths = [p for p, _ in service.requests]
    assert paths == ["/v1/embeddings", "/v1/embeddings"]  # batches of 3 + 1
    assert service.requests[0][1] == {"model": "m", "input": TEXTS[:3]}


def test_transient_failures_are_retried(service):
    service.fail_next = [503, 429]
    vectors = OpenAIEmbedder(service.url + "/v1", "m").embed(["hello"])
    assert vectors.shape[0] == 1 and service.fail_next == []


def test_permanent_failure_says_what_to_check(service):
    service.fail_next = [401]
    with pytest.raises(EmbeddingError, match="embedding_api_key"):
        OpenAIEmbedder(service.url + "/v1", "m").embed(["hello"])


def test_unreachable_server_is_a_clear_error():
    embedder = OpenAIEmbedder("http://127.0.0.1:9", "m", retries=0, timeout=2)
    with pytest.raises(EmbeddingError, match="unreachable"):
        embedder.embed(["hello"])


@pytest.fixture(params=["file", "postgresql"])
def open_cache(request, tmp_path):
    """A function opening the cache (again): the embedded mode's SQLite file, or a table of
    the application database (server mode: PostgreSQL)."""
    from citewell.db.engine import url_engine
    from citewell.embedders import DatabaseEmbeddingCache

    if request.param == "file":
        return lambda: EmbeddingCache(tmp_path / "cache.sqlite")
    engine = url_engine(request.getfixturevalue("postgres").create_database())
    return lambda: DatabaseEmbeddingCache(engine)


def test_cache_never_embeds_the_same_text_twice(open_cache, onnx_embedder):
    cached = CachedEmbedder(onnx_embedder, open_cache())
    first = cached.embed(["alpha text", "beta text", "alpha text"])
    assert cached.embedded == 2
    second = CachedEmbedder(onnx_embedder, open_cache())
    again = second.embed(["beta text", "alpha text"])
    assert second.embedded == 0
    assert np.allclose(again, first[[1, 0]])
    second.cache.put(onnx_embedder.model_id, ["x"], first[:1])  # a second writer: no error
    second.cache.put(onnx_embedder.model_id, ["x"], first[:1])
    assert second.cache.forget(onnx_embedder.model_id) == 3


def test_onnx_batches_by_tokens_without_changing_vectors(onnx_embedder):
    """Texts of very different token lengths, shuffled: batched by token length, each text's
    vector is the one it gets alone (padding never leaks into a vector)."""
    from citewell.embedders.onnx import token_batches

    texts = [("duck " * n).strip() for n in (3, 200, 1, 57, 120, 9, 250, 30)]
    together = onnx_embedder.embed(texts)
    alone = np.vstack([onnx_embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    lengths = np.array([5, 1, 4, 2, 3])
    assert [b.tolist() for b in token_batches(lengths, 2)] == [[1, 3], [4, 2], [0]]


def test_onnx_runs_small_batches_on_every_thread(onnx_embedder, monkeypatch):
    """Batches go single-threaded to one worker per core at once (faster on CPU than one run
    spread over the cores); even three texts are cut so that both threads get work, and the
    vectors are the ones each text gets alone."""
    import threading

    seen: list[tuple[str, int]] = []
    encode = type(onnx_embedder)._encode

    def spy(self, ids, mask, session):
        seen.append((threading.current_thread().name, len(ids)))
        return encode(self, ids, mask, session)

    monkeypatch.setattr(type(onnx_embedder), "_encode", spy)
    texts = ["first text about ducks", "a second, longer text about geese and swans", "third"]
    vectors = onnx_embedder.embed(texts)
    assert onnx_embedder.threads == 2 and onnx_embedder.batch_size == 4
    assert sorted(n for _, n in seen) == [1, 2]  # 3 texts over 2 threads
    assert all(name.startswith("citewell-embed") for name, _ in seen)
    seen.clear()
    alone = np.vstack([onnx_embedder.embed([t]) for t in texts])
    np.testing.assert_allclose(vectors, alone, atol=1e-5)
    assert [n for _, n in seen] == [1, 1, 1]
    assert not any(name.startswith("citewell-embed") for name, _ in seen)  # caller's thread


def test_repeated_queries_are_embedded_once(tmp_path, onnx_embedder, monkeypatch):
    cached = CachedEmbedder(onnx_embedder, EmbeddingCache(tmp_path / "cache.sqlite"))
    monkeypatch.setattr("citewell.embedders.cache.QUERY_CACHE_SIZE", 2)
    calls: list[list[str]] = []
    real = onnx_embedder.embed

    def counting(texts, kind="document"):
        calls.append(list(texts))
        return real(texts, kind)

    monkeypatch.setattr(onnx_embedder, "embed", counting)
    first = cached.embed(["what do ducks eat"], "query")
    first[0, 0] = 42.0  # a caller changing its copy does not change the cache
    again = cached.embed(["what do ducks eat"], "query")
    assert calls == [["what do ducks eat"]] and again[0, 0] != 42.0
    cached.embed(["geese"], "query")
    cached.embed(["swans"], "query")  # the oldest query leaves the cache
    cached.embed(["what do ducks eat"], "query")
    assert len(calls) == 4
    assert cached.embedded == 0  # queries never count as documents embedded
