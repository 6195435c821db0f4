"""`citewell eval --answers FILE`: questions run through the chat pipeline as a client
would send them (a model or preset, KBs), scored per question and in total.

FILE is JSONL, one question per line: ``question``; ``answers`` (reference answers, or
``answer``; an empty list: nothing answers it, and the answer should abstain); optionally
``passages`` (reference passage texts) or ``files`` (reference file names) for retrieval
recall, ``kb`` (or ``knowledge_bases``) and ``model``. With a
judge model, an LLM also grades correctness and each cited sentence's support."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from citewell.answer.attribution_text import answer_units
from citewell.answer.exchange import EXTRACTIVE_MODEL, EXTRACTIVE_NOTE, ChatRequest, ChatResult
from citewell.app import Citewell
from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.errors import InvalidInput
from citewell.evaluation import answer_metrics as m
from citewell.llm.base import ChatMessage

MIN_CLAIM_WORDS = 3  # shorter lines ("Sure!", a heading) are no claims
JUDGE_PROMPT = (
    "Reference answers:\n{references}\n\nAnswer to grade:\n{answer}\n\nDoes the answer say "
    "what a reference answer says (extra correct detail is fine)? Reply with one word: yes "
    "or no."
)
SUPPORT_PROMPT = (
    "Passage:\n{passage}\n\nClaim:\n{claim}\n\nDoes the passage support the claim? Reply "
    "with one word: yes or no."
)


@dataclass(frozen=True)
class QACase:
    question: str
    answers: tuple[str, ...]
    passages: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    kbs: tuple[str, ...] = ()
    model: str = ""


@dataclass
class CaseResult:
    question: str
    answer: str
    latency_ms: float
    answerable: bool  # False: no reference answer, the answer should abstain
    exact_match: float | None
    token_f1: float | None
    answer_contains: float | None  # a reference answer appears in the answer
    cited_share: float | None  # share of claim sentences with a [n]; None: no claims
    citation_validity: float | None  # 1: every [n] names a source; None: it cites nothing
    abstained: float  # 1: it says it cannot answer from the sources
    retrieval_recall: float | None = None
    citation_support: float | None = None  # None: it cites nothing
    faithfulness: float | None = None
    judged_correct: float | None = None  # with a judge model
    judged_support: float | None = None
    sources: list[str] = field(default_factory=list)  # file names, [n] order
    attribution: list[dict[str, Any]] = field(default_factory=list)  # sentence → span


def load_cases(path: Path) -> list[QACase]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            answers = row["answers"] if "answers" in row else [row["answer"]]
            kbs = row.get("knowledge_bases") or ([row["kb"]] if row.get("kb") else [])
            cases.append(
                QACase(
                    str(row["question"]),
                    tuple(str(a) for a in answers),
                    tuple(row.get("passages") or ()),
                    tuple(row.get("files") or ()),
                    tuple(kbs),
                    str(row.get("model") or ""),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(
                f"{path}:{number}: each line is a JSON object with 'question' and 'answers' "
                f"(or 'answer'); {exc}"
            ) from exc
    if not cases:
        raise InvalidInput(f"{path} holds no questions.")
    return cases


class AnswerEvaluation:
    def __init__(self, app: Citewell, kbs: tuple[str, ...], model: str, judge: str) -> None:
        self.app, self.kbs, self.judge = app, kbs, judge
        self.view = Scoped(app, Access.everything())  # the operator, on the data dir itself
        self.model = model or (app.settings.llm.llm_model if app.chat.llm else EXTRACTIVE_MODEL)
        if judge and app.chat.llm is None:
            raise InvalidInput("A judge model needs an LLM: set llm_base_url (or leave --judge).")

    def run(self, cases: list[QACase]) -> dict[str, Any]:
        results = [self.score(case) for case in cases]
        return {"model": self.model, "judge": self.judge or None, "questions": len(results),
                "totals": totals(results), "cases": [asdict(r) for r in results]}  # fmt: skip

    def score(self, case: QACase) -> CaseResult:
        began = time.perf_counter()
        result = self.app.chat.complete(self.view, self._request(case))
        latency = (time.perf_counter() - began) * 1000
        scored = case_scores(case, result, latency)
        if self.judge:
            self._judged(scored, case, result)
        return scored

    def _request(self, case: QACase) -> ChatRequest:
        return ChatRequest(
            model=case.model or self.model,
            messages=(ChatMessage("user", case.question),),
            knowledge=case.kbs or self.kbs,
            access=self.view.access,
        )

    def _judged(self, scored: CaseResult, case: QACase, result: ChatResult) -> None:
        references = "\n".join(f"- {a}" for a in case.answers)
        scored.judged_correct = self._yes(JUDGE_PROMPT.format(references=references,
                                                              answer=result.text))  # fmt: skip
        texts = {s.number: s.text for s in result.prepared.sources}
        verdicts = [
            self._yes(SUPPORT_PROMPT.format(passage=texts[int(n)], claim=sentence))
            for sentence in m.SENTENCE.split(result.text)
            for n in m.MARKER.findall(sentence)
            if int(n) in texts
        ]
        scored.judged_support = sum(verdicts) / len(verdicts) if verdicts else None

    def _yes(self, prompt: str) -> float:
        assert self.app.chat.llm is not None
        reply = self.app.chat.llm.complete(self.judge, [ChatMessage("user", prompt)], {})
        return 1.0 if reply.text.strip().lower().startswith("yes") else 0.0


def case_scores(case: QACase, result: ChatResult, latency: float) -> CaseResult:
    """Every metric of one answer (those about references only for answerable questions)."""
    sources, text, answers = result.prepared.sources, result.text, case.answers
    texts = {s.number: s.text for s in sources}
    found = m.passage_recall(list(texts.values()), case.passages)
    if found is None:
        found = m.file_recall([s.file_name for s in sources], case.files)
    skip = len(EXTRACTIVE_NOTE) if result.extractive else 0
    claims = claim_sentences(text, skip)
    return CaseResult(
        case.question, text, round(latency, 1), bool(answers),
        m.exact_match(text, answers) if answers else None,
        round(m.token_f1(text, answers), 4) if answers else None,
        m.answer_contains(text, answers) if answers else None,
        m.cited_share(claims), m.citation_validity(text, result.invalid_citations),
        max(m.abstained(text), float(result.abstained is not None)), found,
        m.citation_support(text, texts), m.faithfulness(text, list(texts.values())),
        sources=[s.file_name for s in sources],
        attribution=_attributed(result),
    )  # fmt: skip


def claim_sentences(text: str, skip: int = 0) -> list[str]:
    """The answer's sentences that claim something, as written (their [n] included):
    questions and lines of fewer than MIN_CLAIM_WORDS words are none."""
    return [
        text[u.start : u.end]
        for u in answer_units(text, skip)
        if not u.question and len(u.claim.split()) >= MIN_CLAIM_WORDS
    ]


def _attributed(result: ChatResult) -> list[dict[str, Any]]:
    """Which sentence was attributed to which span of which source."""
    if result.attribution is None:
        return []
    return [
        {
            "sentence": result.attribution.text[s.start : s.end],
            "status": s.status,
            "source": s.source,
            "quote": s.quote,
            "quote_start": s.quote_start,
            "quote_end": s.quote_end,
        }
        for s in result.attribution.sentences
        if s.status != "not_a_claim"
    ]


METRICS = (
    "exact_match", "token_f1", "answer_contains", "cited_share", "citation_validity",
    "retrieval_recall", "citation_support", "faithfulness", "judged_correct", "judged_support",
)  # fmt: skip


def totals(results: list[CaseResult]) -> dict[str, float | None]:
    """Each metric's mean over the questions that have it (None: no question has it, e.g.
    citation_validity when no answer cites), abstention apart for answerable and
    unanswerable questions, and latency."""
    out: dict[str, float | None] = {}
    for name in METRICS:
        values = [v for r in results if (v := getattr(r, name)) is not None]
        out[name] = round(statistics.fmean(values), 4) if values else None
    for label, wanted in (("abstained", True), ("abstained_unanswerable", False)):
        values = [r.abstained for r in results if r.answerable is wanted]
        out[label] = round(statistics.fmean(values), 4) if values else None
    latency = sorted(r.latency_ms for r in results)
    out["latency_ms_p50"] = round(statistics.median(latency), 1)
    out["latency_ms_max"] = latency[-1]
    return out
