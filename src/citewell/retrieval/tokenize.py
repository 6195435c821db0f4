"""BM25 terms: case-folded, stemmed words, and overlapping bigrams for Chinese/Japanese/Korean.

Documents and queries go through the same function, and the store indexes the joined terms
with a plain whitespace tokenizer, so every backend ranks on identical terms.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

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
def _snowball(language: str) -> Any:
    """PyStemmer's stemmer for ``language``; None for "none" (words are their terms)."""
    if language in ("", "none"):
        return None
    import Stemmer

    try:
        return Stemmer.Stemmer(language)
    except KeyError as exc:
        from citewell.errors import ConfigError

        raise ConfigError(
            f"No Snowball stemmer for {language!r}; use one of {Stemmer.algorithms()} or 'none'."
        ) from exc


def _stemmer(language: str) -> Callable[[list[str]], list[str]]:
    snowball = _snowball(language)
    return (lambda words: words) if snowball is None else snowball.stemWords  # type: ignore[no-any-return]


def _word_stemmer(language: str) -> Callable[[str], str]:
    snowball = _snowball(language)
    return str if snowball is None else snowball.stemWord  # type: ignore[no-any-return]


MEMO_WORDS = 200_000  # about 30 MB of words and terms a stemmer; then it starts again
# ASCII's non-word characters (all but letters, digits and "_") as spaces: an ASCII text's
# words are then what str.split finds, in a quarter of the regular expression's time.
_ASCII_GAPS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum() and c != "_"})


class _Terms(dict[str, str]):
    """Word → its term ("" for a stop word or an over-long word), each made once per
    process: a text's words are mostly words seen before, and a look-up costs a fifth of
    PyStemmer's call. A word not seen yet is made by ``__missing__``, so a text with one
    new word (a number, a name) costs one call more, not a second pass over its words
    (0.63x the CPU time of one at 300,000 chunks)."""

    def __init__(self, language: str) -> None:
        super().__init__()
        self.stem = _word_stemmer(language)

    def __missing__(self, word: str) -> str:
        if word.isdigit() and word.isascii() and len(word) <= MAX_TERM_LENGTH:
            # Every Snowball stemmer leaves ASCII digits as they are, and numbers (years,
            # sizes, ids) are many and mostly seen once: not kept, they do not push the
            # words out of a full memo.
            return word
        if len(self) >= MEMO_WORDS:
            self.clear()
        term = "" if word in STOP_WORDS or len(word) > MAX_TERM_LENGTH else self.stem(word)
        self[word] = term
        return term


_MEMOS: dict[str, _Terms] = {}  # by stemmer


def _terms_of(language: str) -> _Terms:
    memo = _MEMOS.get(language)
    if memo is None:
        memo = _MEMOS[language] = _Terms(language)
    return memo


def _plain_words(text: str) -> list[str] | None:
    """The folded words of a text without CJK (``_PLAIN_WORD``'s); None if it has CJK."""
    if text.isascii():  # most text: NFKC leaves it as it is, case-folding is lower()
        text = text.lower()
    else:
        text = unicodedata.normalize("NFKC", text).casefold()
        if _CJK_RUN.search(text):
            return None
        text = text.replace("’", "'")
    if "'" in text or not text.isascii():
        return _PLAIN_WORD.findall(text)
    return text.translate(_ASCII_GAPS).split()


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character stays a unigram."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, stemmer: str = "english") -> list[str]:
    """The BM25 terms of ``text``, in order."""
    words = _plain_words(text)
    if words is not None:  # most text: no per-token checks, no placeholders
        return list(filter(None, map(_terms_of(stemmer).__getitem__, words)))
    return _cjk_terms(unicodedata.normalize("NFKC", text).casefold(), stemmer)


def _cjk_terms(text: str, stemmer: str) -> list[str]:
    """The terms of a folded text with CJK runs: their bigrams and the other words'."""
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
    words = _plain_words(text)
    if words is None:
        return " ".join(_cjk_terms(unicodedata.normalize("NFKC", text).casefold(), stemmer))
    return " ".join(filter(None, map(_terms_of(stemmer).__getitem__, words)))


def terms_strings(texts: Sequence[str], stemmer: str = "english") -> list[str]:
    """``terms_string`` of each text (what a process making terms for another runs)."""
    terms = _terms_of(stemmer).__getitem__
    made = []
    for text in texts:
        words = _plain_words(text)
        if words is None:
            made.append(terms_string(text, stemmer))
        else:
            made.append(" ".join(filter(None, map(terms, words))))
    return made
