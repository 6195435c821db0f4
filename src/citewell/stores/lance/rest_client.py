"""Lance's REST namespace client, initialised when first used rather than when Lance loads.

``import lance`` and ``import lancedb`` both import ``lance_namespace``, which imports the data
models of the generated REST client ``lance_namespace_urllib3_client``. Python runs that
package's ``__init__`` first, and it imports every REST API class: hundreds of pydantic
``validate_call`` methods, each building its validator at import. That was 1.6 of the 3.0 s
``import lancedb`` took here, paid by every CLI command and process that opens a chunk table,
for a client an embedded data dir never calls.

So the package goes into ``sys.modules`` uninitialised: its submodules (the data models) import
as before, and the first use of a name of its own (``ApiClient``, ``TableApi``...) runs its
``__init__`` then, whole, as an ordinary import would have.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

CLIENT = "lance_namespace_urllib3_client"
# How long a thread waits for another to finish the package's __init__. Python's own import
# locks detect a deadlock between two threads that each hold what the other imports; a wait
# here cannot, so it is bounded (the waiter then sees the package as far as it got).
INIT_WAIT = 30.0


def defer_rest_client() -> None:
    """Before Lance is imported; does nothing once it was, or without the client package."""
    if CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(CLIENT)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)  # not run yet: __path__ set for submodules
    module.__getattr__ = FirstUse(module)  # type: ignore[method-assign]
    sys.modules[CLIENT] = module


class FirstUse:
    """The package's ``__getattr__`` until its ``__init__`` has run: the first thread to ask
    for a name runs it, others wait for it, and the running thread itself (the ``__init__``
    asking for a name it has not set yet) gets the AttributeError an import would give."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.lock = threading.Lock()
        self.runner: int | None = None
        self.done = threading.Event()

    def __call__(self, name: str) -> Any:
        with self.lock:
            first = self.runner is None
            if first:
                self.runner = threading.get_ident()
        if first:
            try:
                _run(self.module)
            finally:
                self.module.__dict__.pop("__getattr__", None)
                self.done.set()
        elif self.runner == threading.get_ident():
            raise AttributeError(name)
        else:
            self.done.wait(INIT_WAIT)
        try:
            return self.module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {CLIENT!r} has no attribute {name!r}") from None


def _run(module: ModuleType) -> None:
    spec = module.__spec__
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(module)
