"""The gate in front of the page renderers: one user never holds every slot, waiting users
are served in turn, and a user's asks beyond render_per_user are refused at once."""

from __future__ import annotations

import threading
import time

import pytest

from citewell.errors import RateLimited
from citewell.loaders.rendering import FairGate


class Holder(threading.Thread):
    """Takes a slot for ``user`` and keeps it until released."""

    def __init__(self, gate: FairGate, user: str) -> None:
        super().__init__(daemon=True)
        self.gate, self.user = gate, user
        self.got, self.release = threading.Event(), threading.Event()

    def run(self) -> None:
        with self.gate.slot(self.user):
            self.got.set()
            self.release.wait(10)


def _settle() -> None:
    time.sleep(0.05)


def test_one_user_leaves_a_slot_for_others_and_waits_in_turn():
    gate = FairGate(slots=2, per_user=2)
    first, second = Holder(gate, "bob"), Holder(gate, "bob")
    first.start()
    assert first.got.wait(5)
    second.start()
    _settle()
    assert not second.got.is_set(), "bob may not hold both slots"
    with pytest.raises(RateLimited), gate.slot("bob"):
        pass
    alice = Holder(gate, "alice")
    alice.start()
    assert alice.got.wait(5), "the slot bob may not take is alice's at once"
    first.release.set()
    assert second.got.wait(5)
    for holder in (second, alice):
        holder.release.set()
        holder.join(5)
    first.join(5)
    assert gate._free == 2 and not gate._held


def test_waiting_users_are_served_in_turn():
    gate = FairGate(slots=1, per_user=5)
    holder = Holder(gate, "carol")
    holder.start()
    assert holder.got.wait(5)
    order: list[str] = []

    def ask(user: str) -> None:
        with gate.slot(user):
            order.append(user)

    threads = []
    for user in ("bob", "bob", "bob", "alice"):
        threads.append(threading.Thread(target=ask, args=(user,)))
        threads[-1].start()
        _settle()
    holder.release.set()
    for thread in threads:
        thread.join(5)
    assert order[:2] == ["bob", "alice"], order  # alice came last but is served second
