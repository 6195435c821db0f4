"""`citewell serve` as a newcomer starts it: keys are required by default, the first start
prints the admin's key once, and auth=none is refused anywhere but on a loopback address."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from openai import OpenAI

pytestmark = pytest.mark.e2e
KEY = re.compile(r"\b(cw_[A-Za-z0-9_-]{40,})")


def _command(data: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "citewell", "--data-dir", str(data), "serve", *args]


@pytest.mark.parametrize("env", [{"CITEWELL_AUTH": "none"}, {"WEBUI_AUTH": "False"}])
def test_auth_none_is_refused_off_loopback(tmp_path, env):
    """Refused before anything is bound or loaded: the process exits with the fix."""
    result = subprocess.run(
        _command(tmp_path / "data", "--host", "0.0.0.0", "--port", "9"),
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert "only on a loopback address" in result.stderr
    assert "Remove CITEWELL_AUTH=none" in result.stderr


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def _serve(data: Path) -> Iterator[tuple[str, list[str]]]:
    """`citewell serve` on 127.0.0.1; yields its URL and its stderr lines so far."""
    port = _free_port()
    process = subprocess.Popen(
        _command(data, "--host", "127.0.0.1", "--port", str(port)),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    assert process.stderr is not None
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            try:
                if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield url, lines
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_newcomer_gets_an_admin_key_and_uses_it_from_the_openai_sdk(tmp_path):
    data = tmp_path / "data"
    with _serve(data) as (url, lines):
        keys = KEY.findall("".join(lines))
        assert len(keys) == 1 and "shown once" in "".join(lines)
        key = keys[0]
        assert httpx.get(url + "/readyz").status_code == 200  # probes need no key
        refused = httpx.get(url + "/api/v1/knowledge")
        assert refused.status_code == 401 and "citewell key create" in refused.json()["detail"]
        headers = {"Authorization": f"Bearer {key}"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            assert client.post("/api/v1/knowledge", json={"name": "handbook"}).status_code == 201
            added = client.post(
                "/api/v1/knowledge/handbook/text",
                json={"name": "leave.md", "content": "# Leave\n\nStaff get 30 days of leave."},
            )
            assert added.status_code == 201, added.text
        sdk = OpenAI(base_url=url + "/v1", api_key=key)
        assert sdk.models.list().data
        answer = sdk.chat.completions.create(
            model="citewell-extractive",
            messages=[{"role": "user", "content": "How many days of leave?"}],
            extra_body={"knowledge_collections": ["handbook"]},
        )
        assert "30 days" in answer.choices[0].message.content
        assert answer.model_extra["sources"][0]["metadata"]["name"] == "leave.md"
    with _serve(data) as (_, lines):
        assert not KEY.findall("".join(lines))  # only the first start makes the admin
