"""The MCP server with the official `mcp` SDK as the client, over Streamable HTTP (/mcp on
the running server) and stdio (`citewell mcp`): every tool and resource, results with their
citation fields, and access as on the HTTP API: another user, a KB-limited key and a
made-up id get the same answers as for something that does not exist; no key, no data;
a foreign Origin or Host is refused."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.api.conftest import KeyedServer, fill_kb, keyed_server, limited_key

pytestmark = pytest.mark.api

DOCS = {
    "guides/leave.md": "# Leave\n\nStaff get 25 days of paid leave a year, plus public holidays.\n"
    "Unused days carry over until March.",
    "guides/remote.md": "# Remote work\n\nEveryone may work from home two days a week.",
    "bikes.md": "# Bicycles\n\nBike racks are behind the east entrance, under the roof.",
}
TOOLS = {"list_knowledge_bases", "search", "read_file", "list_files", "ask"}


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder, fake_llm) -> Iterator[KeyedServer]:
    data = tmp_path_factory.mktemp("mcp")
    with keyed_server(data, onnx_embedder, fake_llm, ("alice", "bob")) as server:
        with server.client("alice") as alice:
            fill_kb(alice, "handbook", DOCS)
            server.keys["alice-other-only"] = limited_key(alice, "other")
            reader = alice.post("/api/v1/auth/keys", json={"name": "reader", "read_only": True})
            server.keys["alice-reader"] = reader.json()["key"]
        yield server


def over_http(world: KeyedServer, who: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {world.keys[who]}"}, timeout=60)
    return Client(streamable_http_client(f"{world.url}/mcp", http_client=http))


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """(is it an error, the structured result or the error's text)."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:  # the SDK says which tool failed, then the error
        return True, result.content[0].text.removeprefix(f"Error executing tool {tool}: ")
    return False, result.structured_content


def run(coroutine_function: Any, *args: Any) -> Any:
    return anyio.run(coroutine_function, *args)


async def _tour(client: Client) -> dict[str, Any]:
    """What a new agent does: list tools, KBs, search, read around a hit, list files, ask."""
    async with client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        seen: dict[str, Any] = {"tools": tools}
        seen["kbs"] = await _call(client, "list_knowledge_bases")
        seen["search"] = await _call(client, "search", query="how many days of paid leave", k=2)
        found = seen["search"][1]["passages"][0]
        seen["read"] = await _call(client, "read_file", file_id=found["file_id"], lines=2)
        seen["files"] = await _call(client, "list_files", knowledge_base="handbook")
        seen["folder"] = await _call(
            client, "list_files", knowledge_base="handbook", folder="guides"
        )
        seen["ask"] = await _call(client, "ask", question="How many days of leave do staff get?")
        seen["resources"] = [r.uri for r in (await client.list_resources()).resources]
        read = await client.read_resource(f"citewell://file/{found['file_id']}")
        seen["resource_text"] = read.contents[0].text
    return seen


def _check_tour(world: KeyedServer, seen: dict[str, Any], link_base: str) -> None:
    tools = seen["tools"]
    assert set(tools) == TOOLS
    assert all(t.description and t.input_schema and t.output_schema for t in tools.values())
    assert "query" in tools["search"].input_schema["properties"]
    error, kbs = seen["kbs"]
    assert not error and {kb["name"] for kb in kbs["knowledge_bases"]} == {"handbook", "other"}
    error, search = seen["search"]
    best = search["passages"][0]
    assert not error and "25 days of paid leave" in best["text"]
    assert best["file_name"] == "guides/leave.md" and best["folder"] == "guides"
    assert best["knowledge_base"] == "handbook" and best["source_id"] and best["score"] > 0
    text = world.app.storage.text(best["file_id"])
    assert text[best["start"] : best["end"]].strip() in best["text"]
    expected = f"{link_base}/#/file/{best['file_id']}?start={best['start']}&end={best['end']}"
    assert best["link"] == expected
    error, read = seen["read"]
    assert not error and read["text"].startswith("1\t# Leave") and read["next_start_line"] == 3
    assert read["total_lines"] == 4
    error, files = seen["files"]
    assert not error and sorted(f["path"] for f in files["files"]) == sorted(DOCS)
    assert files["folders"] == ["guides"] and files["total"] == 3
    error, folder = seen["folder"]
    assert not error and sorted(f["path"] for f in folder["files"]) == [
        "guides/leave.md",
        "guides/remote.md",
    ]
    error, ask = seen["ask"]
    assert not error and ask["answer"] and ask["sources"], ask
    assert any("25 days" in s["text"] for s in ask["sources"])
    assert f"citewell://file/{best['file_id']}" in seen["resources"]
    assert any(uri.startswith("citewell://kb/") for uri in seen["resources"])
    assert seen["resource_text"] == text


def test_every_tool_and_resource_over_streamable_http(world):
    _check_tour(world, run(_tour, over_http(world, "alice")), world.url)


def _database(world: KeyedServer) -> dict[str, str]:
    """The server's database for a process started beside it (the PostgreSQL pass)."""
    url = world.settings.storage.database_url
    return {"CITEWELL_DATABASE_URL": url} if url else {}


def test_every_tool_and_resource_over_stdio(world):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "citewell", "--data-dir", str(world.settings.storage.data_dir), "mcp"],
        env={**os.environ, **_database(world), "CITEWELL_API_KEY": world.keys["alice"]},
    )
    seen = run(_tour, Client(params))
    server = world.settings.server
    _check_tour(world, seen, f"http://{server.host}:{server.port}")


async def _as_outsider(client: Client, file_id: str, kb_id: str) -> dict[str, Any]:
    async with client:
        kbs = await _call(client, "list_knowledge_bases")
        answers = {
            "kbs": kbs[1]["knowledge_bases"],
            "by_name": await _call(client, "search", query="leave", knowledge_bases=["handbook"]),
            "by_id": await _call(client, "search", query="leave", knowledge_bases=[kb_id]),
            "made_up": await _call(client, "search", query="leave", knowledge_bases=["nope"]),
            "file": await _call(client, "read_file", file_id=file_id),
            "made_up_file": await _call(client, "read_file", file_id="f" * 32),
            "files": await _call(client, "list_files", knowledge_base="handbook"),
            "all": await _call(client, "search", query="paid leave days"),
            "resources": [r.uri for r in (await client.list_resources()).resources],
        }
        try:
            await client.read_resource(f"citewell://file/{file_id}")
            answers["resource"] = "read"
        except Exception as exc:  # the SDK raises the server's MCP error
            answers["resource"] = str(exc)
    return answers


@pytest.mark.parametrize("who", ["bob", "alice-other-only"])
def test_what_a_caller_may_not_read_is_not_there(world, who):
    kb_id = world.app.kb_id("handbook")
    file_id = next(f.id for f in world.app.files("handbook") if f.name == "leave.md")
    seen = run(_as_outsider, over_http(world, who), file_id, kb_id)
    assert all(kb["name"] != "handbook" for kb in seen["kbs"])
    for name in ("by_name", "by_id", "made_up", "files"):
        error, text = seen[name]
        assert error and text.startswith("knowledge_base_not_found:"), (name, text)
    assert seen["by_name"][1].replace("'handbook'", "X") == seen["made_up"][1].replace(
        "'nope'", "X"
    )
    error, text = seen["file"]
    assert error and text.startswith("file_not_found:")
    assert text.replace(file_id, "X") == seen["made_up_file"][1].replace("f" * 32, "X")
    assert not seen["all"][0] and all(
        p["knowledge_base"] != "handbook" for p in seen["all"][1]["passages"]
    )
    assert not any(file_id in uri for uri in seen["resources"])
    assert seen["resource"] != "read" and "not_found" in seen["resource"]


async def _writable(client: Client) -> dict[str, bool]:
    async with client:
        listed = (await _call(client, "list_knowledge_bases"))[1]["knowledge_bases"]
        found = await _call(client, "search", query="paid leave", knowledge_bases=["handbook"])
    assert not found[0] and found[1]["passages"]  # reading is what a read-only key may do
    return {kb["name"]: kb["writable"] for kb in listed}


def test_a_read_only_key_reads_and_may_change_nothing(world):
    assert run(_writable, over_http(world, "alice")) == {"handbook": True, "other": True}
    assert run(_writable, over_http(world, "alice-reader")) == {
        "handbook": False,
        "other": False,
    }


def test_no_key_no_data_and_foreign_pages_are_refused(world):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    plain = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    no_key = httpx.post(f"{world.url}/mcp", json=body, headers=plain)
    assert no_key.status_code == 401 and no_key.json()["code"] == "unauthenticated"
    keyed = {**plain, "Authorization": f"Bearer {world.keys['alice']}"}
    foreign = httpx.post(
        f"{world.url}/mcp", json=body, headers={**keyed, "Origin": "https://evil.example"}
    )
    assert foreign.status_code == 403 and "mcp_allowed_origins" in foreign.json()["detail"]
    rebound = httpx.post(f"{world.url}/mcp", json=body, headers={**keyed, "Host": "evil.example"})
    assert rebound.status_code == 421
    local_page = httpx.post(
        f"{world.url}/mcp", json=body, headers={**keyed, "Origin": "http://localhost:3000"}
    )
    assert local_page.status_code not in (401, 403, 421)


def test_stdio_without_a_key_says_how_to_get_one(world):
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "CITEWELL_API_KEY"} | _database(world)
    started = subprocess.run(
        [
            sys.executable,
            "-m",
            "citewell",
            "--data-dir",
            str(world.settings.storage.data_dir),
            "mcp",
        ],
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode != 0 and started.stdout == ""
    assert "CITEWELL_API_KEY" in started.stderr and "citewell key create" in started.stderr
