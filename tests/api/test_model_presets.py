"""Model presets over the API (/api/v1/models), with keys: created, used at /v1, changed,
shared and deleted; invisible to whom they are not shared with; never widening access."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from citewell.app import Citewell
from citewell.config import Settings
from tests.api.conftest import run_server
from tests.api.test_access import _text, user_keys

pytestmark = pytest.mark.api

HANDBOOK = "# Leave\n\nParental leave is sixteen weeks. Fathers take it in two parts."


@dataclass
class Team:
    url: str
    keys: dict[str, str]
    app: Citewell

    def client(self, who: str) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.keys[who]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def team(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[Team]:
    settings = Settings.load(
        data_dir=tmp_path_factory.mktemp("presets"),
        llm_base_url=fake_llm.url + "/v1",
        model_presets='[{"id": "house", "base_model": "llama3"}]',
    )
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    with run_server(settings, onnx_embedder, app) as url:
        team = Team(url, user_keys(app, url, ("alice", "bob")), app)
        with team.client("alice") as alice:
            kb = alice.post("/api/v1/knowledge", json={"name": "handbook"}).json()
            _text(alice, kb["id"], "leave.md", HANDBOOK)
        yield team


def _chat(client: httpx.Client, model: str) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "How long is leave?"}]}
    return client.post("/v1/chat/completions", json=body)


def _models(client: httpx.Client) -> list[str]:
    return [m["id"] for m in client.get("/v1/models").json()["data"]]


def test_a_preset_is_its_owners_until_shared(team, fake_llm):
    preset = {"model": "hr", "knowledge": ["handbook"], "base_model": "llama3",
              "mode": "bm25", "top_k": 1, "system": "Be brief."}  # fmt: skip
    with team.client("alice") as alice, team.client("bob") as bob:
        created = alice.post("/api/v1/models", json=preset)
        assert created.status_code == 201, created.text
        made = created.json()
        assert made["source"] == "api" and made["knowledge"] != ["handbook"]  # stored as an id
        assert "hr" in _models(alice) and "house" in _models(alice)
        answer = _chat(alice, "hr").json()
        assert (
            len(answer["sources"]) == 1 and answer["sources"][0]["metadata"]["name"] == "leave.md"
        )
        assert fake_llm.requests[-1][1]["model"] == "llama3"
        assert "Be brief." in fake_llm.requests[-1][1]["messages"][0]["content"]

        assert "hr" not in _models(bob)
        assert _chat(bob, "hr").status_code == 404
        for method in ("GET", "PUT", "DELETE"):
            response = bob.request(method, f"/api/v1/models/{made['id']}", json=preset)
            assert response.status_code == 404, (method, response.text)
        assert [m["model"] for m in bob.get("/api/v1/models").json()] == ["house"]

        shared = alice.put(f"/api/v1/models/{made['id']}/grants", json={"principal": "user:bob"})
        assert shared.status_code == 200, shared.text
        assert "hr" in _models(bob)
        # Bob may use it, but it never reads for him what he may not read himself.
        answer = _chat(bob, "hr").json()
        assert answer["sources"] == [] and "sixteen" not in str(fake_llm.requests[-1][1])
        assert bob.put(f"/api/v1/models/{made['id']}", json=preset).status_code == 403

        alice.put(
            f"/api/v1/models/{made['id']}/grants",
            json={"principal": "user:bob", "permission": "write"},
        )
        changed = bob.put(f"/api/v1/models/{made['id']}", json={**preset, "knowledge": []})
        assert changed.status_code == 200 and changed.json()["knowledge"] == []
        assert bob.delete(f"/api/v1/models/{made['id']}").status_code == 403  # owner's call
        assert bob.get(f"/api/v1/models/{made['id']}/grants").status_code == 403

        grants = alice.get(f"/api/v1/models/{made['id']}/grants").json()
        assert grants == [{"model_id": made["id"], "principal": "user:bob", "permission": "write"}]
        assert alice.delete(f"/api/v1/models/{made['id']}").status_code == 204
        assert "hr" not in _models(alice) and "hr" not in _models(bob)
    # Recorded by the presets' service, as every change is, whichever adapter asked.
    trail = {(e.actor, e.action) for e in team.app.accounts.audit.find(action="model.")}
    assert {("alice", "model.create"), ("bob", "model.update"), ("alice", "model.delete")} <= trail


def test_names_are_per_owner_and_settings_presets_are_read_only(team):
    with team.client("alice") as alice, team.client("bob") as bob:
        mine = alice.post("/api/v1/models", json={"model": "notes"})
        assert mine.status_code == 201
        again = alice.post("/api/v1/models", json={"model": "notes"})
        assert again.status_code == 409
        theirs = bob.post("/api/v1/models", json={"model": "notes"})
        assert theirs.status_code == 201  # tells Bob nothing about Alice's
        assert bob.get("/api/v1/models/notes").json()["id"] == theirs.json()["id"]
        assert alice.post("/api/v1/models", json={"model": "house"}).status_code == 409
        house = alice.get("/api/v1/models/house").json()
        assert house["source"] == "settings"
        assert alice.put("/api/v1/models/house", json={"model": "house"}).status_code == 403
        unknown_kb = alice.post("/api/v1/models", json={"model": "x", "knowledge": ["nope"]})
        assert unknown_kb.status_code == 404
        for bad in ({"model": "has space"}, {"model": "ok", "mode": "fuzzy"}, {"model": ""}):
            response = alice.post("/api/v1/models", json=bad)
            assert response.status_code in (400, 422), response.text
            assert response.json()["code"]
