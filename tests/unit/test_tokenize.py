import importlib

from citewell.retrieval.tokenize import cjk_bigrams, terms_string, tokenize


def test_case_insensitive_and_stemmed():
    assert tokenize("Parental LEAVE Policies") == tokenize("parental leave policy")
    assert tokenize("Running runs") == ["run", "run"]


def test_stop_words_dropped_but_content_kept():
    assert tokenize("the leave of an employee") == ["leav", "employe"]


def test_chinese_becomes_overlapping_bigrams():
    assert tokenize("北京大学") == ["北京", "京大", "大学"]


def test_japanese_and_korean_runs():
    assert tokenize("東京タワー") == ["東京", "京タ", "タワ", "ワー"]
    assert tokenize("한국어 문서") == ["한국", "국어", "문서"]


def test_mixed_scripts_split_at_script_boundaries():
    assert tokenize("GPU显卡test") == ["gpu", "显卡", "test"]


def test_single_cjk_character_is_a_unigram():
    assert cjk_bigrams("猫") == ["猫"]


def test_fullwidth_forms_are_normalised():
    assert tokenize("ＡＢＣ１２３") == ["abc123"]


def test_no_stemmer_option():
    assert tokenize("running policies", stemmer="none") == ["running", "policies"]


def test_terms_string_joins_with_spaces():
    assert terms_string("Sick leave, 3 days") == "sick leav 3 day"


def _unmemoised(text: str, language: str = "english") -> list[str]:
    """The terms as PyStemmer makes them word by word, with no memo in between."""
    import re
    import unicodedata

    import Stemmer

    from citewell.retrieval.tokenize import MAX_TERM_LENGTH, STOP_WORDS

    text = unicodedata.normalize("NFKC", text).casefold()
    words = [w.replace("’", "'") for w in re.findall(r"\w+(?:['’]\w+)*", text)]
    kept = [w for w in words if w not in STOP_WORDS and len(w) <= MAX_TERM_LENGTH]
    return [Stemmer.Stemmer(language).stemWord(w) for w in kept]


def test_terms_remembered_between_texts_equal_those_made_afresh():
    texts = [
        "Don’t stop O’Neil's naïve café studies; running runners ran",
        "the studies of a runner " + "x" * 41 + " ﬁnancial ½ x² İstanbul",
        "Straße STRASSE rock'n'roll it's 'quoted' under_score",
        # ASCII text takes a shortcut (split at its non-word characters): the same words
        "a_b __init__ x'y it''s o'' ''a 9'9 \x00nul\x7fdel\ttab\nnew `back`tick ~tilde^ (3.5%)",
        "HTTP/2 C++ e-mail U.S.A. 10,000 f(x)=y; [x]{y}<z> \\path @at #hash $5 a|b",
    ]
    for _ in range(2):  # first made, then remembered
        for text in texts:
            assert tokenize(text) == _unmemoised(text)
            assert tokenize(text, "german") == _unmemoised(text, "german")
            assert terms_string(text) == " ".join(_unmemoised(text))


def test_the_memo_starts_again_when_full(monkeypatch):
    module = importlib.import_module("citewell.retrieval.tokenize")  # the package's name
    monkeypatch.setattr(module, "MEMO_WORDS", 3)
    words = " ".join(f"walk{n}ed" for n in range(10))
    assert tokenize(words) == _unmemoised(words)
    assert tokenize("the studies studies") == ["studi", "studi"]
    assert len(module._MEMOS["english"]) <= 3 + 2  # emptied, then this text's words


def test_numbers_are_their_own_terms_and_not_remembered():
    """ASCII numbers are terms as they are in every stemmer (a million of them, each seen
    once, would empty the memo of its words five times)."""
    module = importlib.import_module("citewell.retrieval.tokenize")
    module._MEMOS.clear()
    text = "Trials 2019 and 0042 ran 12 weeks; " + "9" * 41
    assert tokenize(text) == _unmemoised(text) == ["trial", "2019", "0042", "ran", "12", "week"]
    # An over-long one has no term, as any over-long word: remembered as such.
    assert set(module._MEMOS["english"]) == {"trials", "and", "ran", "weeks", "9" * 41}
    assert tokenize("٣٤ 34", "arabic") == _unmemoised("٣٤ 34", "arabic")
