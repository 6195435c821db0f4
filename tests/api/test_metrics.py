"""GET /metrics: what requests, searches and errors moved is counted by route template and
code, the database's figures are read at each scrape, no KB or file name ever appears, and
only loopback callers or holders of metrics_token may read it."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.testclient import TestClient

from citewell.api.app import create_app
from citewell.app import Citewell
from citewell.config import Settings
from tests.api.conftest import run_server

pytestmark = pytest.mark.api

SECRET_KB, SECRET_FILE = "zebra-merger-kb", "acquisition-target.txt"


def value(body: str, name: str, **labels: str) -> float:
    """One sample of the exposition text (0 when absent)."""
    for line in body.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.fixture(scope="module")
def served(tmp_path_factory, onnx_embedder):
    settings = Settings.load(data_dir=tmp_path_factory.mktemp("metrics"), auth="none")
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    with run_server(settings, onnx_embedder, app) as url:
        yield url


def test_requests_searches_and_errors_are_counted_without_names(served):
    with httpx.Client(base_url=served, timeout=60) as client:
        before = client.get("/metrics")
        assert before.status_code == 200 and before.headers["content-type"].startswith("text/plain")
        client.post("/api/v1/knowledge", json={"name": SECRET_KB}).raise_for_status()
        client.post(
            f"/api/v1/knowledge/{SECRET_KB}/text",
            json={"name": SECRET_FILE, "content": "The merger closes in March."},
        ).raise_for_status()
        for _ in range(3):
            client.get("/api/v1/knowledge").raise_for_status()
        search = {"collection_names": [SECRET_KB], "query": "when does the merger close", "k": 2}
        client.post("/api/v1/retrieval/query/collection", json=search).raise_for_status()
        assert client.get(f"/api/v1/knowledge/{SECRET_KB}-missing").status_code == 404
        assert client.get("/no/such/page").status_code == 404
        after = client.get("/metrics").text
    old = before.text
    listed = {"method": "GET", "route": "/api/v1/knowledge", "status": "200"}
    assert (
        value(after, "citewell_http_requests_total", **listed)
        == value(old, "citewell_http_requests_total", **listed) + 3
    )
    one_kb = {"method": "GET", "route": "/api/v1/knowledge/{kb_id}", "status": "404"}
    assert value(after, "citewell_http_requests_total", **one_kb) >= 1
    assert value(after, "citewell_http_requests_total", route="unmatched", status="404") >= 1
    assert value(after, "citewell_errors_total", code="knowledge_base_not_found") >= 1
    for stage in ("embed", "vector", "keyword", "total"):
        assert value(after, "citewell_retrieval_stage_seconds_count", stage=stage) >= 1, stage
    assert value(after, "citewell_embedded_texts_total", kind="document") >= 1
    assert value(after, "citewell_knowledge_bases") >= 1 and value(after, "citewell_chunks") >= 1
    assert "citewell_jobs{" in after and "citewell_job_queue_oldest_seconds" in after
    assert SECRET_KB not in after and SECRET_FILE not in after and "zebra" not in after


def test_only_loopback_or_the_token_may_read(tmp_path, onnx_embedder):
    """Starlette's test client calls from the address 'testclient': not a loopback one."""
    plain = Settings.load(data_dir=tmp_path / "a", auth="none")
    with TestClient(create_app(plain, Citewell.from_settings(plain, embedder=onnx_embedder))) as c:
        refused = c.get("/metrics")
        assert refused.status_code == 403 and "metrics_token" in refused.json()["detail"]
    keyed = Settings.load(data_dir=tmp_path / "b", auth="none", metrics_token="s3cret-scrape")
    with TestClient(create_app(keyed, Citewell.from_settings(keyed, embedder=onnx_embedder))) as c:
        assert c.get("/metrics").status_code == 401
        wrong = c.get("/metrics", headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401
        right = c.get("/metrics", headers={"Authorization": "Bearer s3cret-scrape"})
        assert right.status_code == 200 and "citewell_http_requests_total" in right.text


def test_with_a_token_loopback_needs_it_too(tmp_path, onnx_embedder):
    """Behind a proxy on the same host every request is from loopback: a token set means
    every caller sends it, and a client's X-Forwarded-For changes nothing."""
    keyed = Settings.load(data_dir=tmp_path / "c", auth="none", metrics_token="s3cret-scrape")
    app = Citewell.from_settings(keyed, embedder=onnx_embedder)
    with run_server(keyed, onnx_embedder, app) as url:
        assert httpx.get(f"{url}/metrics", timeout=30).status_code == 401
        spoofed = {"X-Forwarded-For": "127.0.0.1"}
        assert httpx.get(f"{url}/metrics", headers=spoofed, timeout=30).status_code == 401
        token = {"Authorization": "Bearer s3cret-scrape"}
        assert httpx.get(f"{url}/metrics", headers=token, timeout=30).status_code == 200


@pytest.mark.parametrize("value", ["*", "127.0.0.1,*"])
def test_forwarded_headers_from_anyone_are_refused_at_start(tmp_path, value):
    from citewell.errors import ConfigError

    with pytest.raises(ConfigError, match="may not be '\\*'"):
        Settings.load(data_dir=tmp_path, forwarded_allow_ips=value)


def test_every_metric_the_dashboard_and_alerts_use_exists(served):
    """docs/grafana-dashboard.json and the alerts in docs/deploy.md name only real metrics."""
    from tests.conftest import REPO

    text = (REPO / "docs" / "grafana-dashboard.json").read_text()
    deploy = (REPO / "docs" / "deploy.md").read_text()
    text += deploy.split("## Monitoring", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"citewell_[a-z_]+", text))
    body = httpx.get(f"{served}/metrics", timeout=30).text
    families = set(re.findall(r"^# HELP (\S+)", body, re.M))
    for name in named:
        base = re.sub(r"_(bucket|count|sum)$", "", name)
        assert base in families or base.removesuffix("_total") + "_total" in families, name
