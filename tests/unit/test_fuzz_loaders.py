"""Fuzzing the loaders: replayed crashers (tests/fuzz/crashers.json) and a hypothesis run
(derandomized, so CI is repeatable; hunt for new crashers with python -m tests.fuzz.mutate).

The contract under test: a loader given any bytes returns a Document or raises a
CitewellError (a 4xx through the API), never anything else.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.mutate import CRASHERS, SEEDS, apply, load_directly

RECIPES = json.loads(CRASHERS.read_text())


def test_the_crasher_corpus_is_not_empty():
    assert len(RECIPES) >= 10


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: f"{r['fixture']}-{r['error']}")
def test_known_crasher_is_now_a_clean_error(shared_docs, recipe):
    data = apply((shared_docs / recipe["fixture"]).read_bytes(), recipe["ops"])
    load_directly(data, recipe["fixture"])


mutation = st.lists(
    st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
    min_size=1,
    max_size=12,
)


@pytest.mark.parametrize("fixture", SEEDS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=mutation, cut=st.none() | st.integers(min_value=1))
def test_mutated_fixture_never_escapes_the_error_hierarchy(shared_docs, fixture, changes, cut):
    original = (shared_docs / fixture).read_bytes()
    ops = [["set", pos % len(original), value] for pos, value in changes]
    if cut is not None:
        ops.append(["cut", cut % len(original)])
    load_directly(apply(original, ops), fixture)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.binary(max_size=2048),
    extension=st.sampled_from(
        [
            ".pdf",
            ".docx",
            ".doc",
            ".ppt",
            ".xls",
            ".eml",
            ".msg",
            ".rtf",
            ".odt",
            ".epub",
            ".html",
            ".csv",
            ".json",
            ".txt",
            ".png",
        ]
    ),
)
def test_arbitrary_bytes_under_any_name(data, extension):
    load_directly(data, "input" + extension)
