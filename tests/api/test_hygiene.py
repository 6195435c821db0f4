"""Limits and hygiene on a real server with auth on: rate limits and key caps per user,
body and upload size limits (also for bodies without a Content-Length), file names,
downloads that never render, CORS only when configured, and slow password guessing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.config import Settings
from tests.api.conftest import run_server

RATE = 5


MAX_KEYS = 3


@dataclass
class Guarded:
    url: str
    users: AuthStore
    admin_id: str

    def client(self, user_id: str = "") -> httpx.Client:
        """A client with a key of its own, of a new admin of its own unless ``user_id``
        says whose (the rate limit counts per user)."""
        if not user_id:
            user_id = self.users.create_user(
                f"admin-{len(self.users.list_users())}", role="admin"
            ).id
        key = self.users.create_key(user_id)[1]
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=60
        )


@pytest.fixture(scope="module")
def guarded(tmp_path_factory, onnx_embedder) -> Iterator[Guarded]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("guarded"),
        rate_limit_per_minute=RATE,
        max_keys_per_user=MAX_KEYS,
        max_request_bytes=4096,
        max_upload_bytes=2048,
        max_upload_request_bytes=8192,
        cors_allow_origins="https://app.example",
    )
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    users = AuthStore(app.catalog.engine)
    admin = users.create_user("admin", "a long password", role="admin")
    app.create_kb("docs")
    with run_server(settings, onnx_embedder, app) as url:
        yield Guarded(url, users, admin.id)


def test_rate_limit_per_user(guarded):
    busy_user = guarded.users.create_user("busy", role="admin").id
    with (
        guarded.client(busy_user) as busy,
        guarded.client(busy_user) as same_user,
        guarded.client() as other,
    ):
        codes = [busy.get("/api/v1/knowledge").status_code for _ in range(RATE + 1)]
        assert codes == [200] * RATE + [429]
        limited = busy.get("/api/v1/knowledge")
        assert limited.json()["code"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 60
        assert same_user.get("/api/v1/knowledge").status_code == 429  # another key buys nothing
        assert other.get("/api/v1/knowledge").status_code == 200  # a user of its own


def test_a_user_holds_at_most_max_keys_per_user(guarded):
    """More keys would be more tokens to lose track of; at the cap a new key is a 409 and a
    sign-in retires the oldest sign-in key instead of piling up."""
    user = guarded.users.create_user("collector", "a long password")
    with httpx.Client(base_url=guarded.url, timeout=60) as anonymous:

        def sign_in() -> str:
            answer = anonymous.post(
                "/api/v1/auth/login", json={"name": "collector", "password": "a long password"}
            )
            assert answer.status_code == 200, answer.text
            return str(answer.json()["api_key"])

        first = sign_in()
        headers = {"Authorization": f"Bearer {first}"}
        with httpx.Client(base_url=guarded.url, headers=headers, timeout=60) as client:
            made = [client.post("/api/v1/auth/keys", json={"name": f"k{n}"}) for n in range(3)]
        assert [m.status_code for m in made] == [201, 201, 409]
        assert "max_keys_per_user" in made[2].json()["detail"]
        sign_in()  # at the cap: the first sign-in key makes room
        live = [k for k in guarded.users.list_keys(user.id) if not k.revoked_at]
        assert len(live) == MAX_KEYS
        retired = anonymous.get("/api/v1/auth/me", headers=headers)
        assert retired.status_code == 401


def test_bodies_over_the_limit_get_413(guarded):
    with guarded.client() as client:
        big = client.post("/api/v1/knowledge", json={"name": "x", "description": "d" * 5000})
        assert big.status_code == 413 and "max_request_bytes" in big.json()["detail"]

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"name": "y", "description": "'
            for _ in range(10):
                yield b"d" * 1000
            yield b'"}'

        streamed = client.post(
            "/api/v1/knowledge", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413, streamed.text
        assert client.get("/api/v1/knowledge/y").status_code == 404  # nothing half-made
        upload = client.post("/api/v1/knowledge/docs/files", files={"file": ("a.txt", b"a" * 3000)})
        assert upload.status_code == 413 and "max_upload_bytes" in upload.json()["detail"]


def test_file_names_are_sanitised_and_downloads_never_render(guarded):
    with guarded.client() as client:
        page = b"<html><body><script>alert(1)</script><p>Ducks swim.</p></body></html>"
        stored = client.post(
            "/api/v1/knowledge/docs/files",
            files={"file": ("../..\\etc/..evil.html", page, "text/html")},
        )
        assert stored.status_code == 201, stored.text
        record = stored.json()["file"]
        assert record["name"] == "evil.html"
        download = client.get(f"/api/v1/files/{record['id']}/content")
        assert download.content == page
        assert download.headers["content-type"] == "application/octet-stream"
        assert download.headers["x-content-type-options"] == "nosniff"
        assert download.headers["content-disposition"].startswith("attachment;")
        text = client.post(
            "/api/v1/knowledge/docs/text", json={"name": "note.txt", "content": "Geese honk."}
        ).json()["file"]
        plain = client.get(f"/api/v1/files/{text['id']}/content")
        assert plain.headers["content-type"] == "text/plain; charset=utf-8"


def test_cors_only_for_configured_origins(guarded, extractive_server):
    preflight = {"Access-Control-Request-Method": "POST"}
    allowed = httpx.options(
        guarded.url + "/v1/chat/completions",
        headers={"Origin": "https://app.example", **preflight},
    )
    assert allowed.status_code == 200  # a preflight, answered (not 405)
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    other = httpx.options(
        guarded.url + "/v1/chat/completions",
        headers={"Origin": "https://evil.example", **preflight},
    )
    assert "access-control-allow-origin" not in other.headers
    default = httpx.get(
        extractive_server.url + "/v1/models", headers={"Origin": "https://a.example"}
    )
    assert default.status_code == 200 and "access-control-allow-origin" not in default.headers


def test_password_sign_in_and_slow_guessing(guarded):
    with httpx.Client(base_url=guarded.url, timeout=60) as anonymous:
        good = anonymous.post(
            "/api/v1/auth/login", json={"name": "admin", "password": "a long password"}
        )
        assert good.status_code == 200 and good.json()["user"]["role"] == "admin"
        session = {"Authorization": f"Bearer {good.json()['api_key']}"}
        me = anonymous.get("/api/v1/auth/me", headers=session).json()
        assert me["user"]["name"] == "admin" and me["key"]["expires_at"] > 0
        codes = [
            anonymous.post(
                "/api/v1/auth/login", json={"name": "admin", "password": f"guess-{n}"}
            ).status_code
            for n in range(11)
        ]
        assert codes[:10] == [401] * 10 and codes[-1] == 429  # login_failures_per_address
