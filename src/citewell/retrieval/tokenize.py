"""BM25 terms: case-folded, stemmed words, and overlapping bigrams for Chinese/Japanese/Korean.

Documents and queries go through the same function, and the store indexes the joined terms
with a plain whitespace tokenizer, so every backend ranks on identical terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache

# Han, Hiragana, Katakana, Hangul (syllables and jamo), CJK punctuation excluded.
_CJK = (
    "\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
)
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+(?:['’][^\W{_CJK}]+)*", re.UNICODE)
_CJK_RUN = re.compile(rf"[{_CJK}]")
# _TOKEN's words for text without CJK and with ’ made ' first: the same tokens, found in
# two thirds of the time (no character class to exclude).
_PLAIN_WORD = re.compile(r"\w+(?:'\w+)*")

# Lucene's English stop words: frequent enough to carry no signal, short enough to be safe.
_STOP = "a an and are as at be but by for if in into is it no not of on or such that the their "
STOP_WORDS = frozenset((_STOP + "then there these they this to was will with").split())
MAX_TERM_LENGTH = 40


@lru_cache(maxsize=8)
def _stemmer(language: str) -> Callable[[list[str]], list[str]]:
    if language in ("", "none"):
        return lambda words: words
    import Stemmer

    try:
        return Stemmer.Stemmer(language).stemWords  # type: ignore[no-any-return]
    except KeyError as exc:
        from citewell.errors import ConfigError

        raise ConfigError(
            f"No Snowball stemmer for {language!r}; use one of {Stemmer.algorithms()} or 'none'."
        ) from exc


_DROPPED = object()  # a stop word or an over-long word: no term
MEMO_WORDS = 200_000  # about 30 MB of words and terms a stemmer; then it starts again
# Stemmer → word → its term (or _DROPPED). A text's words are mostly words seen before, and a
# dictionary look-up costs a fifth of PyStemmer's call per word.
_MEMOS: dict[str, dict[str, object]] = {}


def _plain_terms(words: list[str], language: str) -> list[str]:
    """The terms of a text's words (no CJK): stop words and over-long words dropped, the
    rest stemmed, each word's term made once per process."""
    memo = _MEMOS.setdefault(language, {})
    found = list(map(memo.get, words))
    if None in found:  # words not seen yet (the memo may be emptied meanwhile: kept here)
        new = list(dict.fromkeys(w for w, t in zip(words, found, strict=True) if t is None))
        kept = [w for w in new if w not in STOP_WORDS and len(w) <= MAX_TERM_LENGTH]
        made: dict[str, object] = dict.fromkeys(new, _DROPPED)
        made.update(zip(kept, _stemmer(language)(kept), strict=True))
        if len(memo) > MEMO_WORDS:
            memo.clear()
        memo.update(made)
        found = [made[w] if t is None else t for w, t in zip(words, found, strict=True)]
    return [t for t in found if isinstance(t, str)]


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character stays a unigram."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, stemmer: str = "english") -> list[str]:
    """The BM25 terms of ``text``, in order."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if not _CJK_RUN.search(text):  # most text: no per-token checks, no placeholders
        return _plain_terms(_PLAIN_WORD.findall(text.replace("’", "'")), stemmer)
    words: list[str] = []
    terms: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if _CJK_RUN.match(token):
            terms.extend(cjk_bigrams(token))
        elif token not in STOP_WORDS and len(token) <= MAX_TERM_LENGTH:
            words.append(token.replace("’", "'"))
            terms.append("\0")  # placeholder keeps word order stable after stemming
    stems = iter(_stemmer(stemmer)(words))
    return [next(stems) if term == "\0" else term for term in terms]


def terms_string(text: str, stemmer: str = "english") -> str:
    """Terms joined by spaces: what the store's full-text index holds."""
    return " ".join(tokenize(text, stemmer))


def terms_strings(texts: Sequence[str], stemmer: str = "english") -> list[str]:
    """``terms_string`` of each text (what a process making terms for another runs)."""
    return [terms_string(text, stemmer) for text in texts]
