"""Scores of one answer: exact match, token F1 and "answer contains" against reference
answers (SQuAD's normalisation), recall of reference passages or files among the sources,
the share of sentences that cite, whether it abstained, and two lexical proxies, reported as
such: citation support (how much of each cited sentence's wording its cited sources hold)
and faithfulness (how much of the answer's wording the sources hold). A citation metric is
None for an answer that cites nothing: there is nothing to check, which is not a success."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

ARTICLES = re.compile(r"\b(a|an|the)\b")
MARKER = re.compile(r"\[(\d+)\]")
SENTENCE = re.compile(r"(?<=[.!?])\s+")
PUNCTUATION = re.compile(r"[^\w\s]")  # any script's punctuation, curly quotes included


def normalise(text: str) -> str:
    """Lower case, punctuation and articles out, spaces collapsed (SQuAD's, for every
    script's punctuation)."""
    text = ARTICLES.sub(" ", PUNCTUATION.sub(" ", text.lower()))
    return " ".join(text.split())


def words(text: str) -> list[str]:
    return normalise(MARKER.sub(" ", text)).split()


def exact_match(answer: str, references: Sequence[str]) -> float:
    mine = normalise(MARKER.sub(" ", answer))
    return float(any(mine == normalise(r) for r in references))


def answer_contains(answer: str, references: Sequence[str]) -> float:
    """1 when a reference answer appears in the answer, both normalised (the usual score of
    open-domain QA and noise-robustness benchmarks)."""
    mine = f" {normalise(MARKER.sub(' ', answer))} "
    return float(any(f" {ref} " in mine for r in references if (ref := normalise(r))))


def cited_share(sentences: Sequence[str]) -> float | None:
    """Share of the answer's claim sentences that carry at least one [n]."""
    if not sentences:
        return None
    return sum(bool(MARKER.search(s)) for s in sentences) / len(sentences)


def citation_validity(answer: str, invalid: Sequence[int]) -> float | None:
    """1 when every [n] named a source, 0 when some did not (the pipeline removed them),
    None when the answer cites nothing."""
    if invalid:
        return 0.0
    return 1.0 if MARKER.search(answer) else None


ABSTAINING = re.compile(
    r"\b(?:i (?:do not|don't|cannot|can't) (?:know|answer|find|say)|(?:cannot|can't|unable "
    r"to) (?:answer|find|determine)|(?:no|not enough) (?:information|passage|source)s?\b|"
    r"(?:is|are) not (?:mentioned|provided|given|stated)|(?:does|do) not (?:mention|say|"
    r"contain|support|provide))"
)


def abstained(answer: str) -> float:
    """1 when the answer says it cannot answer from what it was given."""
    return float(bool(ABSTAINING.search(answer.lower().replace("\u2019", "'"))))


def token_f1(answer: str, references: Sequence[str]) -> float:
    return max((_f1(words(answer), words(r)) for r in references), default=0.0)


def _f1(mine: list[str], theirs: list[str]) -> float:
    common = sum((Counter(mine) & Counter(theirs)).values())
    if not common:
        return 0.0
    precision, recall = common / len(mine), common / len(theirs)
    return 2 * precision * recall / (precision + recall)


def passage_recall(sources: Sequence[str], passages: Sequence[str]) -> float | None:
    """Share of reference passages a source holds (or overlaps with at token F1 ≥ 0.5)."""
    if not passages:
        return None
    found = 0
    for passage in passages:
        wanted = normalise(passage)
        if any(wanted in normalise(s) or _f1(words(s), words(passage)) >= 0.5 for s in sources):
            found += 1
    return found / len(passages)


def file_recall(source_files: Sequence[str], files: Sequence[str]) -> float | None:
    if not files:
        return None
    names = {f.rsplit("/", 1)[-1] for f in source_files}
    return sum(f.rsplit("/", 1)[-1] in names for f in files) / len(files)


def citation_support(answer: str, sources: dict[int, str]) -> float | None:
    """Lexical proxy: per sentence with [n] markers, the share of its words (longer than
    three letters) that its cited sources contain; averaged. None without citations."""
    scores = []
    for sentence in SENTENCE.split(answer):
        cited = [int(n) for n in MARKER.findall(sentence) if int(n) in sources]
        wanted = [w for w in words(sentence) if len(w) > 3]
        if not cited or not wanted:
            continue
        held = set(words(" ".join(sources[n] for n in cited)))
        scores.append(sum(w in held for w in wanted) / len(wanted))
    return sum(scores) / len(scores) if scores else None


def faithfulness(answer: str, sources: Sequence[str]) -> float | None:
    """Lexical proxy: the share of the answer's words (longer than three letters) that
    the sources contain."""
    wanted = [w for w in words(answer) if len(w) > 3]
    if not wanted:
        return None
    held = set(words(" ".join(sources)))
    return sum(w in held for w in wanted) / len(wanted)
