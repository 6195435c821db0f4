"""When the sources cannot answer, the answer says so instead of guessing.

Two signs, each with a stable reason code:

- ``unknown_name``: the question names something (a capitalised name inside the sentence,
  or a code with digits: "Pinecrest", "PX-9492", "2031"), or counts something ("how many
  forklifts"), that no source mentions. Found before the model is asked, so it costs
  nothing; a model asked anyway would answer about the nearest thing the sources do
  mention (the damaged pallets when asked about broken forklifts).
- ``unsupported_answer``: most of an answer's sentences no source supports (attribution,
  ``Attribution.abstains``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from citewell.answer.context import CitedSource

# Capitalised at the start of a sentence for grammar's sake, not because they name anything.
QUESTION_WORDS = frozenset(
    (
        "a", "an", "and", "are", "can", "could", "did", "do", "does", "for", "from", "has", "have",
        "how", "i", "if", "in", "is", "it", "of", "on", "or", "our", "please", "should", "tell",
        "the", "their", "there", "these", "this", "those", "to", "was", "we", "were", "what",
        "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "would", "you",
        "your",
    )
)  # fmt: skip
WORD = re.compile(r"[\w][\w'’-]*")
POSSESSIVE = re.compile(r"['’]s$")
SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")
COUNTED = re.compile(
    r"\bhow\s+(?:many|much)\s+(?:of\s+(?:the|their|its|our)\s+)?([^?.!,;:]*)", re.I
)
# Where the counted thing ends: "how many forklifts | did ...", "how many staff | in ...".
COUNTED_END = frozenset(
    (
        "are", "at", "by", "can", "could", "did", "do", "does", "for", "from", "had", "has",
        "have", "in", "is", "of", "on", "should", "there", "was", "were", "will", "with", "would",
    )
)  # fmt: skip


def named_things(question: str) -> list[str]:
    """What the question names: capitalised words past a sentence's start (not question
    words) and codes that mix letters and digits or numbers of four digits or more."""
    found = []
    for match in WORD.finditer(question):
        word = POSSESSIVE.sub("", match.group()).strip("'’-")
        if not word:
            continue
        if any(c.isdigit() for c in word):
            if any(c.isalpha() for c in word) or len(word) >= 4:
                found.append(word)
            continue
        starts_sentence = SENTENCE_START.search(question[: match.start()]) is not None
        if word[0].isupper() and not starts_sentence and word.casefold() not in QUESTION_WORDS:
            found.append(word)
    return list(dict.fromkeys(found))


def counted_thing(question: str) -> str:
    """What a "how many" question counts: the words after it up to the verb or preposition
    ("How many broken forklifts did ..." → "broken forklifts"), at most three."""
    match = COUNTED.search(question)
    if match is None:
        return ""
    words: list[str] = []
    for word in WORD.findall(match.group(1)):
        if word.casefold() in COUNTED_END or len(words) == 3:
            break
        words.append(word)
    return " ".join(words)


def singular(word: str) -> str:
    """A plural's singular, roughly ("forklifts", "boxes", "parties"), so the two match."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith(("sses", "xes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def unknown_names(question: str, sources: Sequence[CitedSource]) -> list[str]:
    """The things the question names that no source mentions (in its text, the window the
    model reads, or its file's name), and what it counts when no source has any of its
    words (either number)."""
    if not sources:
        return []
    texts = " ".join(f"{s.text} {s.context} {s.file_name} {s.lead}" for s in sources).casefold()
    held = set(WORD.findall(texts.replace("-", " "))) | set(WORD.findall(texts))
    missing = []
    for name in named_things(question):
        parts = name.casefold().replace("-", " ").split()
        if name.casefold() not in held and not all(p in held for p in parts):
            missing.append(name)
    counted = counted_thing(question)
    stems = {singular(word) for word in held}
    if counted and not any(singular(w) in stems for w in counted.casefold().split()):
        missing.append(counted)
    return missing


def not_mentioned(names: Sequence[str]) -> str:
    shown = ", ".join(f"\u201c{n}\u201d" for n in names)
    return (
        f"None of the sources found mention {shown}, so they do not answer this question. "
        "Check the spelling, or choose other knowledge bases."
    )
