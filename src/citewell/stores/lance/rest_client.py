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
_lock = threading.Lock()


def defer_rest_client() -> None:
    """Before Lance is imported; does nothing once it was, or without the client package."""
    if CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(CLIENT)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)  # not run yet: __path__ set for submodules

    def first_use(name: str) -> Any:
        with _lock:
            if module.__dict__.get("__getattr__") is first_use:
                del module.__getattr__
                _run(module)
        return getattr(module, name)

    module.__getattr__ = first_use  # type: ignore[method-assign]
    sys.modules[CLIENT] = module


def _run(module: ModuleType) -> None:
    spec = module.__spec__
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(module)
