"""The one resolver of what is in force for a request: request > preset > KB > settings."""

from citewell.catalog.kb_settings import KnowledgeSettings
from citewell.catalog.preset import ModelPreset
from citewell.config import Settings
from citewell.config.resolve import Choice, merged, resolve
from citewell.types import SearchMode

SETTINGS = Settings(top_k=8, hybrid_search=True, rag_full_context=False)


def test_the_settings_answer_when_no_layer_sets_a_value():
    got = resolve(SETTINGS, Choice(), Choice())
    assert (got.top_k, got.mode, got.relevance_threshold, got.full_context) == (
        8,
        SearchMode.HYBRID,
        None,
        False,
    )
    assert resolve(SETTINGS.with_values({"hybrid_search": False})).mode == SearchMode.VECTOR


def test_the_most_specific_layer_that_sets_a_value_wins():
    request = Choice(top_k=2)
    preset = ModelPreset(id="p", top_k=5, mode="bm25", relevance_threshold=0.3).choice()
    kb = KnowledgeSettings(top_k=7, mode=SearchMode.VECTOR, full_context=True).choice()
    got = resolve(SETTINGS, request, preset, kb)
    assert (got.top_k, got.mode, got.relevance_threshold, got.full_context) == (
        2,
        SearchMode.BM25,
        0.3,
        True,
    )
    assert resolve(SETTINGS, Choice(), Choice(), kb).top_k == 7


def test_merged_layers_leave_unset_values_to_later_ones():
    asked = merged(Choice(top_k=3), Choice(top_k=9, mode=SearchMode.VECTOR))
    assert asked == Choice(top_k=3, mode=SearchMode.VECTOR)
