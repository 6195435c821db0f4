"""`citewell eval --answers`: a reference QA file made from SciFact (each claim, the first
sentence of its abstract as the reference answer, the abstract's file as the reference
source) answered extractively and with the wire-faithful fake LLM and a judge; every metric
reported, an HTML report written, and `--fail-below` a CI gate for answers and for BEIR."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from citewell.app import Citewell
from citewell.cli import main
from citewell.config import Settings
from citewell.evaluation.beir import document_markdown, load_beir
from tests.conftest import SCIFACT
from tests.fake_servers import FakeLLMService, serve
from tests.kept_vectors import kept_vectors

pytestmark = pytest.mark.e2e
QUESTIONS, DISTRACTORS = 8, 120


@pytest.fixture(scope="module")
def scifact_subset():
    data = load_beir(SCIFACT, "test")
    picked = [q for q in sorted(data.qrels) if q in data.queries][:QUESTIONS]
    relevant = {d for q in picked for d in data.qrels[q] if d in data.corpus}
    others = [d for d in sorted(data.corpus) if d not in relevant][:DISTRACTORS]
    return data, picked, sorted(relevant | set(others))


@pytest.fixture(scope="module")
def qa(tmp_path_factory, onnx_embedder, scifact_subset):
    data, picked, docs = scifact_subset
    folder = tmp_path_factory.mktemp("qa")
    with kept_vectors("answer-eval", folder / "data", SCIFACT, onnx_embedder):
        settings = Settings.load(data_dir=folder / "data")
        app = Citewell.from_settings(settings, embedder=onnx_embedder)
        app.create_kb("scifact-qa")
        texts = [(f"{d}.md", document_markdown(*data.corpus[d])) for d in docs]
        app.ingest_texts(texts, "scifact-qa", mime_type="text/markdown")
        app.close()
    lines = []
    for query in picked:
        doc = next(d for d in data.qrels[query] if d in data.corpus)
        first = re.split(r"(?<=[.!?])\s+", data.corpus[doc][1])[0]
        lines.append(
            {
                "question": data.queries[query],
                "answers": [first],
                "files": [f"{doc}.md"],
                "kb": "scifact-qa",
            }  # fmt: skip
        )
    path = folder / "qa.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return folder, path


def _eval(folder, *args, env=None):
    return CliRunner().invoke(main, ["--data-dir", str(folder / "data"), "eval", *args], env=env)


def test_extractive_answers_are_scored_and_reported(qa):
    folder, path = qa
    html = folder / "report.html"
    done = _eval(folder, "--answers", str(path), "--json", "--html", str(html),
                 "--fail-below", "citation_validity=1")  # fmt: skip
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["questions"] == QUESTIONS and report["model"] == "citewell-extractive"
    totals = report["totals"]
    assert totals["citation_validity"] == 1.0
    assert totals["retrieval_recall"] >= 0.5  # the claim's abstract is among the sources
    assert totals["citation_support"] >= 0.9
    assert 0 < totals["token_f1"] <= 1 and totals["exact_match"] is not None
    assert totals["judged_correct"] is None and totals["latency_ms_p50"] > 0
    case = report["cases"][0]
    assert case["sources"] and case["answer"]
    page = html.read_text()
    assert "<table>" in page and "retrieval_recall" in page
    assert '<ul class="attribution">' in page and "<b>kept</b>" in page
    words = _eval(folder, "--answers", str(path))
    assert words.exit_code == 0 and "retrieval_recall" in words.output


def test_fail_below_is_a_gate(qa, tmp_path, scifact_subset):
    folder, path = qa
    failed = _eval(folder, "--answers", str(path), "--fail-below", "retrieval_recall=1.01")
    assert failed.exit_code == 1 and "Below the floor: retrieval_recall" in failed.output
    unknown = _eval(folder, "--answers", str(path), "--fail-below", "bleu=0.5")
    assert unknown.exit_code != 0 and "token_f1" in unknown.output  # says what there is
    data, picked, docs = scifact_subset
    tiny = tmp_path / "tiny"
    (tiny / "qrels").mkdir(parents=True)
    (tiny / "corpus.jsonl").write_text(
        "\n".join(
            json.dumps({"_id": d, "title": data.corpus[d][0], "text": data.corpus[d][1]})
            for d in docs
        )  # fmt: skip
    )
    (tiny / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": q, "text": data.queries[q]}) for q in picked)
    )
    qrels = ["query-id\tcorpus-id\tscore"] + [
        f"{q}\t{d}\t{s}" for q in picked for d, s in data.qrels[q].items()
    ]
    (tiny / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    low = _eval(folder, "--beir", str(tiny), "--mode", "bm25", "--fail-below", "ndcg@10=0.99")
    assert low.exit_code == 1 and "bm25.ndcg@10" in low.output
    fine = _eval(folder, "--beir", str(tiny), "--mode", "bm25", "--fail-below", "ndcg@10=0.05")
    assert fine.exit_code == 0, fine.output


def test_an_llm_answers_and_a_judge_grades(qa):
    folder, path = qa
    llm = FakeLLMService()
    with serve(llm) as url:
        # The fake's answer is about ducks: kept (not withheld) so the judge grades it.
        env = {"CITEWELL_LLM_BASE_URL": url + "/v1", "CITEWELL_ABSTAIN_BELOW": "0"}
        done = _eval(folder, "--answers", str(path), "--model", "llama3", "--judge",
                     "fake-llm", "--json", env=env)  # fmt: skip
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["model"] == "llama3" and report["judge"] == "fake-llm"
    totals = report["totals"]
    assert totals["judged_correct"] == 0.0  # the fake says the same sentence, never "yes"
    assert totals["judged_support"] == 0.0 and totals["citation_validity"] == 1.0
    judged = [b for _, b in llm.requests if "Reply with one word" in b["messages"][0]["content"]]
    assert len(judged) >= QUESTIONS and all(b["model"] == "fake-llm" for b in judged)
    case = report["cases"][0]
    assert case["attribution"][0]["status"] == "unsupported"  # ducks in SciFact: none
    assert totals["answer_contains"] == 0.0 and totals["abstained"] == 0.0


def test_an_answer_no_source_supports_is_withheld_and_counted_as_abstained(qa):
    folder, path = qa
    llm = FakeLLMService()
    with serve(llm) as url:
        env = {"CITEWELL_LLM_BASE_URL": url + "/v1"}
        done = _eval(folder, "--answers", str(path), "--model", "llama3", "--json", env=env)
    assert done.exit_code == 0, done.output
    totals = json.loads(done.output)["totals"]
    assert totals["abstained"] == 1.0  # every answer withheld: the fake talks of ducks
    assert totals["citation_validity"] is None and totals["cited_share"] == 0.0


@pytest.mark.slow
def test_the_packaged_local_model_answers_the_reference_file(qa, tmp_path):
    """SmolLM2-135M (GGUF from PyPI, through llama-cpp-python) as the answerer: a real
    model's answers scored end to end. It is tiny, so what is asserted is the run and the
    citations it leaves, not its quality."""
    from tests.e2e.test_local_llm import smollm2_path

    folder, path = qa
    three = tmp_path / "three.jsonl"
    three.write_text("".join(path.read_text().splitlines(keepends=True)[:3]))
    env = {
        "CITEWELL_LLM_ENGINE": "llamacpp",
        "CITEWELL_LLM_MODEL_PATH": str(smollm2_path()),
        "CITEWELL_LLM_CONTEXT_WINDOW": "2048",
        # A tiny model may repeat itself; its answers end here (90 s for one, unbounded).
        "CITEWELL_LLM_RESERVED_TOKENS": "160",
        "CITEWELL_TOP_K": "3",
    }
    done = _eval(folder, "--answers", str(three), "--json", env=env)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["questions"] == 3 and report["model"] != "citewell-extractive"
    assert all(case["answer"].strip() for case in report["cases"])
    totals = report["totals"]
    assert totals["retrieval_recall"] > 0  # the same retrieval as for any answerer
    assert totals["citation_validity"] in (None, 1.0) or 0 <= totals["citation_validity"] <= 1
    assert totals["token_f1"] is not None and totals["latency_ms_p50"] > 0
