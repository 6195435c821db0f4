"""Reranker plumbing. No cross-encoder weights exist offline: the local-model test builds a
tiny randomly initialised ONNX cross-encoder, so it checks wiring, not ranking quality."""

import numpy as np
import pytest

from citewell.config import Settings
from citewell.errors import ConfigError
from citewell.rerankers import RERANKERS, CrossEncoderReranker, HttpReranker
from citewell.testing.rerankers import RerankerConformance, candidates
from tests.fake_servers import FakeService, serve

pytestmark = pytest.mark.conformance


@pytest.mark.parametrize("path", ["/v1/rerank", "/rerank"])
def test_http_reranker_cohere_and_tei_wire(path):
    service = FakeService()
    with serve(service) as url:
        reranker = HttpReranker(url + path, model="rerank-v3", api_key="k")
        out = reranker.rerank(
            "parental leave", candidates("lunch menu", "parental leave rules", "leave"), top_k=2
        )
    assert [c.chunk.id for c in out] == ["c1", "c2"]
    assert out[0].rerank_score > out[1].rerank_score
    body = service.requests[0][1]
    assert body["query"] == "parental leave" and body["model"] == "rerank-v3"


def build_tiny_cross_encoder(directory, tokenizer_json):
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    vocab, dim = 30522, 8
    emb = helper.make_tensor(
        "emb", TensorProto.FLOAT, [vocab, dim], rng.standard_normal(vocab * dim).astype(np.float32)
    )
    w = helper.make_tensor(
        "w", TensorProto.FLOAT, [dim, 1], rng.standard_normal(dim).astype(np.float32)
    )
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["h"]),
        helper.make_node("ReduceMean", ["h", "axes"], ["pooled"], keepdims=0),
        helper.make_node("MatMul", ["pooled", "w"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "s"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 1])],
        initializer=[emb, w, axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, directory / "model.onnx")
    (directory / "tokenizer.json").write_bytes(tokenizer_json.read_bytes())


def test_local_cross_encoder_scores_every_candidate(tmp_path):
    from citewell.embedders.onnx import packaged_tokenizer_path

    build_tiny_cross_encoder(tmp_path, packaged_tokenizer_path())
    reranker = CrossEncoderReranker(tmp_path, batch_size=2)
    out = reranker.rerank("q", candidates("one", "two words", "three more words"), top_k=3)
    assert sorted(c.chunk.id for c in out) == ["c0", "c1", "c2"]
    scores = [c.rerank_score for c in out]
    assert scores == sorted(scores, reverse=True) and all(0 < s < 1 for s in scores)


def test_cross_encoder_needs_a_model_directory(tmp_path):
    with pytest.raises(ConfigError, match="not a directory"):
        CrossEncoderReranker(tmp_path / "missing")
    with pytest.raises(ConfigError, match="model.onnx"):
        CrossEncoderReranker(tmp_path)


class TestBuiltInRerankers(RerankerConformance):
    """Every built-in passes the role's shipped suite: both HTTP wire formats (against the
    fake) and the local cross-encoder (a tiny random model: wiring, not quality)."""

    @pytest.fixture(params=["http-cohere", "http-tei", "cross_encoder"])
    def reranker(self, request, tmp_path):
        if request.param == "cross_encoder":
            from citewell.embedders.onnx import packaged_tokenizer_path

            build_tiny_cross_encoder(tmp_path, packaged_tokenizer_path())
            yield RERANKERS.get("cross_encoder")(
                Settings.load(
                    data_dir=tmp_path, reranker="cross_encoder", reranking_model=str(tmp_path)
                ).reranking
            )
            return
        path = "/v1/rerank" if request.param == "http-cohere" else "/rerank"
        with serve(FakeService()) as url:
            yield RERANKERS.get("http")(
                Settings.load(data_dir=tmp_path, reranker="http", reranker_url=url + path).reranking
            )


def test_none_means_no_reranker(tmp_path):
    assert RERANKERS.get("none")(Settings.load(data_dir=tmp_path).reranking) is None
