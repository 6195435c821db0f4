"""Fewer full garbage collections while a long import makes and drops millions of objects.

An import keeps each batch's chunks (several Python objects each) alive across many young
collections, so CPython promotes them to the oldest generation and, a quarter of it new each
time, runs a full collection over every object of the process: 62 of them, 13.9 s of a
million-chunk import's 105 s, with the GIL held (docs/benchmarks/journal.md, "An import's
own overheads"). The chunks are freed by reference counting; the cycles an import makes are
few. So while it runs, the objects that were there before are left out of every collection
(``gc.freeze``) and the oldest generation is looked at a tenth as often.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

OLDEST_EVERY = 100  # young-generation collections between looks at the oldest (CPython: 10)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Within the block: the process's existing objects frozen, the oldest generation
    collected a tenth as often; both undone after it. Objects another part of the process
    froze (a loaded copy's) stay frozen: then nothing more is frozen here."""
    before = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(before[0], before[1], max(before[2], OLDEST_EVERY))
    try:
        yield
    finally:
        gc.set_threshold(*before)
        if freeze:
            gc.unfreeze()
