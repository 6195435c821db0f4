"""A newcomer finds a role's registry at ``<role>/registry.py`` (decision 0022); the two
that choose among parts of another stage are named here, with where they live."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "citewell"
ELSEWHERE = {
    "loaders/ocr.py": "OCR_ENGINES",  # the OCR engines the loaders use
    "engine/job_handlers.py": "JOB_HANDLERS",  # beside the job runner
}


def _registries() -> dict[str, str]:
    """Module (relative to src/citewell) → the name of each Registry(...) made in it."""
    found = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)):
                continue
            value = node.value
            if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Registry":
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                found[str(path.relative_to(SRC))] = getattr(target, "id", "")
    return found


def test_every_registry_is_in_its_roles_registry_module():
    found = _registries()
    assert len(found) >= 11
    for module, name in found.items():
        if module in ELSEWHERE:
            assert ELSEWHERE[module] == name
            continue
        assert module.endswith("/registry.py"), f"{name} is made in {module}"
        assert name.endswith("S"), f"{module}: {name} is not named after what it makes"
