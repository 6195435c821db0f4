"""docs/api.md says what the server does: every route is documented there, its status table
explains exactly the error statuses that the OpenAPI schema lists, and every error code the
table names is one the server can answer with."""

from __future__ import annotations

import re

from citewell.api.app import create_app
from citewell.app import Citewell
from citewell.config import Settings
from citewell.errors import CitewellError
from tests.conftest import REPO

DOC = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
PATH = re.compile(r"/(?:api/v1|v1)(?:[^\s`?{]|\{[^}]*\})*")
EXTRA_CODES = {"invalid_multipart"}  # answered by the HTTP layer, not an error class
JOB_ONLY = {"lost"}  # a job's error_code, never an HTTP answer


def _error_classes(base: type[CitewellError] = CitewellError) -> list[type[CitewellError]]:
    found = [base]
    for sub in base.__subclasses__():
        found.extend(_error_classes(sub))
    return found


def _schema(tmp_path, embedder):
    settings = Settings.load(data_dir=tmp_path)
    return create_app(settings, Citewell.from_settings(settings, embedder=embedder)).openapi()


def _status_table() -> dict[int, str]:
    rows = re.findall(r"^\| (\d{3}) \| (.*) \|$", DOC, re.M)
    return {int(status): text for status, text in rows}


def test_every_route_is_documented(tmp_path, onnx_embedder):
    def shape(path: str) -> str:
        return re.sub(r"\{[^}]*\}", "{}", path.rstrip("/"))

    documented = {shape(p) for p in PATH.findall(DOC)}
    routes = [p for p in _schema(tmp_path, onnx_embedder)["paths"] if p.startswith(("/api", "/v1"))]
    missing = [p for p in routes if shape(p) not in documented]
    assert not missing, missing


def test_documented_statuses_are_the_schemas(tmp_path, onnx_embedder):
    schema = _schema(tmp_path, onnx_embedder)
    used = {
        int(status)
        for item in schema["paths"].values()
        for operation in item.values()
        for status in operation["responses"]
        if status[0] in "45"
    }
    assert used == set(_status_table()), (used, set(_status_table()))
    raised = {
        cls.status for cls in _error_classes() if cls.status != 500 and cls.code not in JOB_ONLY
    }
    assert raised <= used, raised - used


def test_documented_error_codes_exist():
    codes = {cls.code for cls in _error_classes()} | EXTRA_CODES
    named = {c for text in _status_table().values() for c in re.findall(r"`([a-z_]+)`", text)}
    assert named and named <= codes, named - codes
    # Each error class's code is in the row of its status.
    table = _status_table()
    for cls in _error_classes():
        if cls.status in table and cls.code in named:
            assert f"`{cls.code}`" in table[cls.status], cls


def test_docs_pages_load_everything_from_the_server(tmp_path, onnx_embedder):
    """/docs and /redoc work in an air-gapped install: every script, style and icon they
    name is a path of this server, and each one is served."""
    from fastapi.testclient import TestClient

    settings = Settings.load(data_dir=tmp_path)
    app = create_app(settings, Citewell.from_settings(settings, embedder=onnx_embedder))
    with TestClient(app) as client:
        for page in ("/docs", "/redoc"):
            html = client.get(page).text
            assets = re.findall(r"""(?:src|href)=["']([^"']+)["']|url: ?['"]([^'"]+)['"]""", html)
            named = [a or b for a, b in assets]
            assert named and all(n.startswith("/") for n in named), (page, named)
            assert "cdn" not in html.lower() and "fonts.googleapis" not in html
            for asset in named:
                assert client.get(asset).status_code == 200, asset
