"""Every module imports on its own, first: no import cycle hides behind an import order."""

import importlib
import pkgutil
import sys

import pytest

import citewell

MODULES = sorted(m.name for m in pkgutil.walk_packages(citewell.__path__, "citewell."))


@pytest.mark.parametrize("name", [m for m in MODULES if not m.endswith("__main__")])
def test_module_imports_first(name):
    saved = {k: v for k, v in sys.modules.items() if k.startswith("citewell.")}
    for key in saved:
        del sys.modules[key]
    try:
        importlib.import_module(name)
    finally:
        for key in [k for k in sys.modules if k.startswith("citewell.")]:
            del sys.modules[key]
        sys.modules.update(saved)
        # Importing afresh also rebound each package's attribute for its submodule (on the
        # kept top-level package too); point them back, or "citewell.x.y" paths that
        # monkeypatch resolves would reach the fresh copies, not the modules in use.
        for key, module in saved.items():
            parent, _, child = key.rpartition(".")
            setattr(sys.modules[parent], child, module)
