"""A function run in a child process at the lowest CPU priority (stores/lance/apart.py), as
a big training's build is: its result or its error come back, and a child that dies
without a word is said to have."""

import os
import signal

import pytest

from citewell.errors import StoreError
from citewell.stores.lance.apart import run_apart


def test_the_child_runs_at_the_lowest_priority_and_its_result_comes_back():
    assert run_apart(os.nice, 0) == 19
    assert run_apart(divmod, 17, 5) == (3, 2)


def test_the_childs_error_is_raised_with_its_message():
    with pytest.raises(StoreError, match="FileNotFoundError: .*no-such-dataset"):
        run_apart(os.stat, "/no-such-dataset")


def test_a_child_that_dies_mid_way_is_a_failure_with_its_exit_code():
    with pytest.raises(StoreError, match=f"exit code -{int(signal.SIGABRT)}"):
        run_apart(os.abort)
