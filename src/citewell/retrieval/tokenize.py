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


MEMO_WORDS = 200_000  # about 30 MB of words and terms a stemmer; then it starts again
# Stemmer → word → its term ("" for a stop word or an over-long word). A text's words are
# mostly words seen before, and a dictionary look-up costs a fifth of PyStemmer's call.
_MEMOS: dict[str, dict[str, str]] = {}
# ASCII's non-word characters (all but letters, digits and "_") as spaces: an ASCII text's
# words are then what str.split finds, in a quarter of the regular expression's time.
_ASCII_GAPS = str.maketrans({c: " " for c in map(chr, range(128)) if not c.isalnum() and c != "_"})


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


def _memo_terms(words: list[str], language: str) -> list[str]:
    """Each word's term ("" where it has none: a stop word, an over-long word), the term
    of each word made once per process."""
    memo = _MEMOS.setdefault(language, {})
    found = list(map(memo.get, words))
    if None in found:  # words not seen yet (the memo may be emptied meanwhile: kept here)
        new = list(dict.fromkeys(w for w, t in zip(words, found, strict=True) if t is None))
        kept = [w for w in new if w not in STOP_WORDS and len(w) <= MAX_TERM_LENGTH]
        made = dict.fromkeys(new, "")
        made.update(zip(kept, _stemmer(language)(kept), strict=True))
        if len(memo) > MEMO_WORDS:
            memo.clear()
        memo.update(made)
        found = [made[w] if t is None else t for w, t in zip(words, found, strict=True)]
    return found  # type: ignore[return-value]  # no None is left


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character stays a unigram."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def tokenize(text: str, stemmer: str = "english") -> list[str]:
    """The BM25 terms of ``text``, in order."""
    words = _plain_words(text)
    if words is not None:  # most text: no per-token checks, no placeholders
        return list(filter(None, _memo_terms(words, stemmer)))
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
    return " ".join(filter(None, _memo_terms(words, stemmer)))


def terms_strings(texts: Sequence[str], stemmer: str = "english") -> list[str]:
    """``terms_string`` of each text (what a process making terms for another runs)."""
    return [terms_string(text, stemmer) for text in texts]
