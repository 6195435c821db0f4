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


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character stays a unigram."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, stemmer: str = "english") -> list[str]:
    """The BM25 terms of ``text``, in order."""
    text = unicodedata.normalize("NFKC", text).casefold()
    if not _CJK_RUN.search(text):  # most text: no per-token checks, no placeholders
        plain = [
            token.replace("’", "'")
            for token in _TOKEN.findall(text)
            if token not in STOP_WORDS and len(token) <= MAX_TERM_LENGTH
        ]
        return _stemmer(stemmer)(plain)
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
