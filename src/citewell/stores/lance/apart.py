"""A function run in a child process at the lowest CPU priority, stopped when this one exits.

A big training's build runs so (training.py): Lance's build takes every core for minutes,
and the searches of the machine's API processes come first. The child is spawned (forking
a process that runs LanceDB's threads is not safe) and is a process of its own rather than
a ``ProcessPoolExecutor``'s: an exiting process waited for a pool's running work to end,
so a server stopped during a training at six million rows would have waited 15 minutes.
At exit the children are stopped instead (``stop_children``); what they built is not
committed, and the training runs again when next due.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from multiprocessing import get_context
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from citewell.errors import StoreError
from citewell.stores.background import Exiting, exiting

NICENESS = 19

_children: set[BaseProcess] = set()
_children_lock = threading.Lock()


def run_apart(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` in a spawned child at niceness ``NICENESS``; its result (pickled).
    Raises ``StoreError`` with the child's error when it failed, ``Exiting`` when this
    process began to exit meanwhile."""
    spawn = get_context("spawn")
    receive, send = spawn.Pipe(duplex=False)
    child = spawn.Process(
        target=_in_child, args=(send, function, *args), name="citewell-apart", daemon=True
    )
    with _children_lock:
        if exiting.is_set():
            raise Exiting("The process is exiting.")
        child.start()
        _children.add(child)
    send.close()  # the child's end: recv() below then sees the child's end too
    try:
        outcome = _outcome(receive)
        child.join()
    finally:
        with _children_lock:
            _children.discard(child)
    return _result(outcome, child)


def stop_children() -> None:
    """Stop every child under way (the process is exiting)."""
    with _children_lock:
        for child in _children:
            child.terminate()


def _outcome(receive: Connection) -> tuple[bool, Any] | None:
    """What the child sent: (True, its result) or (False, its error); None if it ended
    without a word (stopped, or killed: its exit code says so)."""
    try:
        outcome: tuple[bool, Any] = receive.recv()
    except (EOFError, OSError):
        return None
    return outcome


def _result(outcome: tuple[bool, Any] | None, child: BaseProcess) -> Any:
    if outcome is not None and outcome[0]:
        return outcome[1]
    if exiting.is_set():
        raise Exiting("The process is exiting: the child was stopped.")
    if outcome is not None:
        raise StoreError(outcome[1])
    raise StoreError(f"The child process ended with exit code {child.exitcode} and no result.")


def _in_child(send: Connection, function: Callable[..., Any], *args: Any) -> None:
    os.nice(NICENESS)
    try:
        send.send((True, function(*args)))
    except Exception as error:  # noqa: BLE001 - told to the parent, which raises it
        send.send((False, f"{type(error).__name__}: {error}"))
