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
