"""Signing in with the company's identity, against real parts: Debian's slapd (started here
with StartTLS and a throwaway CA), the npm oidc-provider under Node, and requests through a
trusted proxy address and from another one (127.0.0.2). The directory's groups become
Citewell groups whose grants decide what each person reads; a change in the directory
changes that at the next sign-in."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.config import Settings
from citewell.testing.ldap_server import LdapServer, Person
from citewell.testing.oidc_server import API_AUDIENCE, OidcPerson, OidcServer
from citewell.testing.processes import free_port
from citewell.testing.reverse_proxy import NginxProxy
from tests.api.conftest import run_server

SECRET = "Pelicanquartz"  # a word only the engineering KB has
PROXY_USER, PROXY_GROUPS = "X-Forwarded-User", "X-Forwarded-Groups"


@dataclass
class World:
    url: str
    app: Citewell
    ldap: LdapServer
    oidc: OidcServer
    admin: str
    kb: dict[str, Any]

    def client(
        self, key: str = "", headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Client:
        sent = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(
            base_url=self.url, headers={**sent, **(headers or {})}, timeout=60, **kwargs
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory, onnx_embedder) -> Iterator[World]:
    with ExitStack() as started:  # each server stops, also when a later one fails to start
        ldap = LdapServer()
        ldap.start()
        started.callback(ldap.stop)
        ldap.seed(
            [
                Person("alice", "alice-ldap-pass", "Alice Liddell", ("engineering", "staff")),
                Person("bob", "bob-ldap-pass", "Bob Marley", ("staff",)),
            ]
        )
        port = free_port()
        oidc = OidcServer([f"http://127.0.0.1:{port}/api/v1/auth/oidc/callback"])
        oidc.set_people(
            [
                OidcPerson("erin", "erin-idp-pass", "erin@example.org", ["engineering"]),
                OidcPerson("frank", "frank-idp-pass", "frank@example.org", ["sales"]),
            ]
        )
        oidc.start()
        started.callback(oidc.stop)
        settings = Settings.load(
            data_dir=tmp_path_factory.mktemp("identity"),
            login_failures_per_address=4,
            sign_up=True,
            admin_groups="citewell-admins",
            **ldap.settings(),
            **oidc.settings(f"http://127.0.0.1:{port}"),
            oidc_access_tokens=True,
            oidc_audience=API_AUDIENCE,
            trusted_header=PROXY_USER,
            trusted_groups_header=PROXY_GROUPS,
            trusted_proxies="127.0.0.1",
        )
        app = Citewell.from_settings(settings, embedder=onnx_embedder)
        users = AuthStore(app.catalog.engine)
        root = users.create_user("root", role="admin")
        admin = users.create_key(root.id, "tests")[1]
        with run_server(settings, onnx_embedder, app, port=port) as url:
            world = World(url, app, ldap, oidc, admin, {})
            with world.client(admin) as client:
                world.kb = client.post("/api/v1/knowledge", json={"name": "eng-docs"}).json()
                text = {"name": "plan.md", "content": f"# Plan\n\nProject {SECRET} ships in May."}
                assert client.post(f"/api/v1/knowledge/{world.kb['id']}/text", json=text).is_success
                assert client.post("/api/v1/groups", json={"name": "engineering"}).is_success
                grant = {"principal": "group:engineering", "permission": "read"}
                assert client.put(
                    f"/api/v1/knowledge/{world.kb['id']}/grants", json=grant
                ).is_success
            yield world


def _ldap_login(w: World, name: str, password: str) -> httpx.Response:
    with w.client() as anonymous:
        body = {"name": name, "password": password, "method": "ldap"}
        return anonymous.post("/api/v1/auth/login", json=body)


def _reads_kb(w: World, key: str = "", **kwargs: Any) -> bool:
    """Whether this caller finds the engineering KB's secret by search."""
    query = {"query": "When does the project ship?", "collection_names": [w.kb["id"]], "k": 3}
    with w.client(key, **kwargs) as client:
        found = client.post("/api/v1/retrieval/query/collection", json=query)
    assert found.status_code in (200, 404), found.text
    return found.status_code == 200 and SECRET in found.text


def _chat_answer(w: World, key: str) -> str:
    """The chat's answer about the engineering KB, or the refusal's text."""
    body = {
        "model": "citewell-extractive",
        "messages": [{"role": "user", "content": "When does the project ship?"}],
        "knowledge_collections": [w.kb["id"]],
    }
    with w.client(key) as client:
        return client.post("/api/v1/rag/chat/completions", json=body).text


def _users(w: World) -> set[str]:
    with w.client(w.admin) as admin:
        return {u["name"] for u in admin.get("/api/v1/users").json()}


def _logins(w: World) -> list[tuple[str, str]]:
    with w.client(w.admin) as admin:
        events = admin.get("/api/v1/audit", params={"action": "user.login"}).json()
    return [(e["actor"], e["detail"].get("method", "")) for e in events]


# --- LDAP ------------------------------------------------------------------------------------
def test_ldap_sign_in_brings_the_directory_groups_and_their_grants(world: World) -> None:
    signed = _ldap_login(world, "alice", "alice-ldap-pass")
    assert signed.status_code == 200, signed.text
    key = signed.json()["api_key"]
    assert _reads_kb(world, key)
    with world.client(key) as alice:
        me = alice.get("/api/v1/auth/me").json()
    assert me["user"]["name"] == "alice" and me["user"]["role"] == "user"
    with world.client(world.admin) as admin:
        groups = {g["name"]: g["members"] for g in admin.get("/api/v1/groups").json()}
    assert "alice" in groups["engineering"]
    assert "staff" not in groups  # group_creation is off: no Citewell group, left out
    assert ("alice", "ldap") in _logins(world)

    assert SECRET in _chat_answer(world, key)  # chat (extractive here: no LLM) reads it too

    bob = _ldap_login(world, "bob", "bob-ldap-pass")
    assert bob.status_code == 200, bob.text
    assert not _reads_kb(world, bob.json()["api_key"])
    assert SECRET not in _chat_answer(world, bob.json()["api_key"])


def test_leaving_a_directory_group_takes_the_access_away_at_the_next_sign_in(world: World) -> None:
    world.ldap.add_person(Person("dave", "dave-ldap-pass", "Dave Grohl"))
    world.ldap.add_to_group("dave", "engineering")
    first = _ldap_login(world, "dave", "dave-ldap-pass").json()["api_key"]
    assert _reads_kb(world, first)
    world.ldap.remove_from_group("dave", "engineering")
    second = _ldap_login(world, "dave", "dave-ldap-pass")
    assert second.status_code == 200
    assert not _reads_kb(world, second.json()["api_key"])
    assert not _reads_kb(world, first)  # the grant went with the group, for every key
    with world.client(world.admin) as admin:
        changes = admin.get("/api/v1/audit", params={"action": "user.groups"}).json()
    assert any(e["actor"] == "dave" and e["detail"]["removed"] == ["engineering"] for e in changes)


@pytest.mark.parametrize(
    ("name", "password"),
    [
        ("alice", "wrong-password"),
        ("*)(uid=*", "alice-ldap-pass"),  # filter metacharacters match nobody
        ("*", "alice-ldap-pass"),
        ("nobody-here", "whatever-pass"),
    ],
)
def test_ldap_refusals_create_nothing(world: World, name: str, password: str) -> None:
    before = _users(world)
    refused = _ldap_login(world, name, password)
    assert refused.status_code == 401, refused.text
    assert refused.json()["code"] == "unauthenticated"
    assert _users(world) == before


def test_the_directory_check_stops_the_keys_of_people_who_left(world: World) -> None:
    from click.testing import CliRunner

    from citewell.cli import main

    world.ldap.add_person(Person("kim", "kim-ldap-pass", "Kim Deal"))
    world.ldap.add_to_group("kim", "engineering")
    session = _ldap_login(world, "kim", "kim-ldap-pass").json()["api_key"]
    with world.client(session) as kim:
        lasting = kim.post("/api/v1/auth/keys", json={"name": "script"}).json()["key"]
    assert _reads_kb(world, lasting)
    world.ldap.remove_person("kim")
    s = world.app.settings
    env = {
        "CITEWELL_LDAP_URL": s.identity.ldap_url,
        "CITEWELL_LDAP_CA_FILE": s.identity.ldap_ca_file,
        "CITEWELL_LDAP_BIND_DN": s.identity.ldap_bind_dn,
        "CITEWELL_LDAP_BIND_PASSWORD": s.identity.ldap_bind_password,
        "CITEWELL_LDAP_SEARCH_BASE": s.identity.ldap_search_base,
        "CITEWELL_DATABASE_URL": s.storage.database_url,
    }
    ran = CliRunner().invoke(
        main, ["--data-dir", str(s.storage.data_dir), "identity", "sync"], env=env
    )
    assert ran.exit_code == 0, ran.output
    assert "disabled: kim;" in ran.output
    with world.client(lasting) as script:
        assert script.get("/api/v1/auth/me").status_code == 401  # every key of hers stopped
    assert _ldap_login(world, "kim", "kim-ldap-pass").status_code == 401


def test_the_login_throttle_counts_ldap_failures(world: World) -> None:
    world.ldap.add_person(Person("gina", "gina-ldap-pass", "Gina Smith"))
    statuses = [_ldap_login(world, "gina", "not-her-password").status_code for _ in range(5)]
    assert statuses[:4] == [401] * 4 and statuses[4] == 429
    assert _ldap_login(world, "gina", "gina-ldap-pass").status_code == 429  # even the right one


# --- the trusted proxy header ----------------------------------------------------------------
def test_signing_in_through_a_real_reverse_proxy(world: World) -> None:
    """nginx signs people in (basic auth) and names them in headers it sets itself."""
    people = {"henry": "henry-proxy-pass", "iris": "iris-proxy-pass"}
    proxy = NginxProxy(world.url, people, {"henry": "engineering,sales"})
    proxy.start()
    try:
        henry = httpx.Client(base_url=proxy.url, auth=("henry", "henry-proxy-pass"), timeout=60)
        # What a client sends under the proxy's header names is replaced by the proxy.
        with henry:
            me = henry.get("/api/v1/auth/me", headers={PROXY_USER: "root"})
            assert me.status_code == 200, me.text
            assert me.json()["user"]["name"] == "henry"
            query = {"query": "When does the project ship?", "collection_names": [world.kb["id"]]}
            assert SECRET in henry.post("/api/v1/retrieval/query/collection", json=query).text
        with httpx.Client(base_url=proxy.url, auth=("iris", "iris-proxy-pass")) as iris:
            assert iris.get("/api/v1/auth/me").json()["user"]["name"] == "iris"
            assert iris.get(f"/api/v1/knowledge/{world.kb['id']}").status_code == 404
        with httpx.Client(base_url=proxy.url, headers={PROXY_USER: "root"}) as stranger:
            assert stranger.get("/api/v1/auth/me").status_code == 401  # the proxy's own refusal
    finally:
        proxy.stop()
    assert ("henry", "header") in _logins(world)


def test_a_disabled_person_is_refused_at_once_through_the_proxy(world: World) -> None:
    headers = {PROXY_USER: "jack@example.org"}
    with world.client(headers=headers) as jack:
        assert jack.get("/api/v1/auth/me").status_code == 200
        assert jack.get("/api/v1/auth/me").status_code == 200  # now answered from memory
        with world.client(world.admin) as admin:
            changed = admin.patch("/api/v1/users/jack@example.org", json={"disabled": True})
            assert changed.status_code == 200, changed.text
        refused = jack.get("/api/v1/auth/me")
    assert refused.status_code == 401, refused.text


def test_the_trusted_header_from_another_address_is_refused(world: World) -> None:
    before = _users(world)
    elsewhere = httpx.HTTPTransport(local_address="127.0.0.2")  # not a trusted proxy
    spoofed = {PROXY_USER: "root", "X-Forwarded-For": "127.0.0.1"}
    with world.client(headers=spoofed, transport=elsewhere) as outsider:
        refused = outsider.get("/api/v1/auth/me")
    assert refused.status_code == 403, refused.text
    assert refused.json()["code"] == "untrusted_identity_header"
    assert _users(world) == before


# --- OpenID Connect ----------------------------------------------------------------------------
def _through_provider(w: World, browser: httpx.Client, person: str, password: str) -> str:
    """Follow the sign-in through the provider's login page; the callback's URL."""
    start = browser.get("/api/v1/auth/oidc/login", params={"return_to": "/#/chat"})
    assert start.status_code == 302, start.text
    page = browser.get(start.headers["location"], follow_redirects=True)
    uid = re.search(r"/interaction/([^/\"]+)/login", page.text)
    assert uid, page.text
    answer = browser.post(
        f"{w.oidc.issuer}/interaction/{uid.group(1)}/login",
        data={"username": person, "password": password},
    )
    location = answer.headers["location"]
    while not location.startswith(w.url):
        answer = browser.get(urljoin(w.oidc.issuer, location))
        location = answer.headers["location"]
    return location


def _page_values(response: httpx.Response) -> tuple[str, dict[str, str]]:
    fragment = urlsplit(response.headers["location"]).fragment
    view, _, query = fragment.partition("?")
    return view, {k: v[0] for k, v in parse_qs(query).items()}


def test_oidc_sign_in_from_the_provider_login_page(world: World) -> None:
    with world.client() as browser:
        callback = _through_provider(world, browser, "erin", "erin-idp-pass")
        landed = browser.get(callback)
        view, values = _page_values(landed)
        assert view == "/signed-in" and values["next"] == "/chat"
        session = browser.post("/api/v1/auth/oidc/ticket", json={"ticket": values["ticket"]})
        assert session.status_code == 200, session.text
        again = browser.post("/api/v1/auth/oidc/ticket", json={"ticket": values["ticket"]})
        assert again.status_code == 401  # one use only
        replayed = browser.get(callback)  # the same state and code a second time
    assert _page_values(replayed)[0] == "/sign-in"
    assert _page_values(replayed)[1]["code"] == "identity_refused"
    key = session.json()["api_key"]
    assert session.json()["user"]["name"] == "erin"
    assert _reads_kb(world, key)
    assert ("erin", "oidc") in _logins(world)
    with world.client(key) as erin:
        assert erin.post("/api/v1/auth/logout").status_code == 204
        assert erin.get("/api/v1/auth/me").status_code == 401


def _provider_session(w: World, person: str, password: str, groups: list[str]) -> str:
    """The key of a sign-in through the provider by ``person``, now in ``groups`` there."""
    people = list(w.oidc.people.values())
    for each in people:
        if each.username == person:
            each.groups = groups
    w.oidc.set_people(people)
    with w.client() as browser:
        landed = browser.get(_through_provider(w, browser, person, password))
        ticket = _page_values(landed)[1]["ticket"]
        session = browser.post("/api/v1/auth/oidc/ticket", json={"ticket": ticket})
    assert session.status_code == 200, session.text
    return str(session.json()["api_key"])


def test_oidc_groups_change_at_the_next_sign_in(world: World) -> None:
    first = _provider_session(world, "frank", "frank-idp-pass", ["engineering"])
    assert _reads_kb(world, first)
    _provider_session(world, "frank", "frank-idp-pass", ["sales"])
    assert not _reads_kb(world, first)


def test_a_return_url_to_another_host_is_refused(world: World) -> None:
    with world.client() as browser:
        for target in ("https://evil.example/", "//evil.example/#/kbs", "/\\evil.example"):
            refused = browser.get("/api/v1/auth/oidc/login", params={"return_to": target})
            assert refused.status_code == 400, (target, refused.text)
            assert refused.json()["code"] == "invalid_input"


def test_a_callback_with_a_state_never_issued_is_refused(world: World) -> None:
    before = _users(world)
    with world.client() as browser:
        landed = browser.get("/api/v1/auth/oidc/callback", params={"code": "x", "state": "made-up"})
    assert _page_values(landed)[1]["code"] == "identity_refused"
    assert _users(world) == before


# --- the provider's access tokens on the API -----------------------------------------------
def _service_token(w: World) -> str:
    answer = httpx.post(
        f"{w.oidc.issuer}/token",
        data={"grant_type": "client_credentials", "resource": API_AUDIENCE, "scope": "openid"},
        auth=(w.oidc.service_id, w.oidc.service_secret),
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def test_a_service_calls_the_api_with_the_providers_access_token(world: World) -> None:
    token = _service_token(world)
    with world.client(token) as service:
        me = service.get("/api/v1/auth/me")
    assert me.status_code == 200, me.text
    assert me.json()["user"]["name"] == world.oidc.service_id
    assert not _reads_kb(world, token)  # no groups: nothing granted


def test_access_tokens_the_provider_did_not_sign_are_refused(world: World) -> None:
    from joserfc.jwk import RSAKey

    now = int(time.time())
    claims = {
        "iss": world.oidc.issuer,
        "aud": API_AUDIENCE,
        "sub": "erin",
        "iat": now,
        "exp": now + 600,
    }
    other = RSAKey.generate_key(2048, parameters={"kid": "test-key-1"})
    forged = [
        world.oidc.sign(claims, key=other),  # same key id, another key
        world.oidc.sign({**claims, "aud": "someone-else"}),
        world.oidc.sign({**claims, "iss": "http://127.0.0.1:1"}),
        world.oidc.sign({**claims, "exp": now - 3600}),
        _unsigned(claims),
    ]
    for token in forged:
        with world.client(token) as caller:
            refused = caller.get("/api/v1/auth/me")
        assert refused.status_code == 401, refused.text
        assert refused.json()["code"] == "identity_refused"


def _unsigned(claims: dict[str, Any]) -> str:
    """A JWT with alg 'none' and no signature."""
    import base64
    import json

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def test_id_tokens_failing_a_check_are_refused(world: World) -> None:
    from joserfc.jwk import RSAKey

    from citewell.auth.identity.oidc import OidcClient
    from citewell.auth.identity.types import IdentityRefused

    settings = world.app.settings.identity
    client = OidcClient(settings, "http://127.0.0.1:1/callback")
    now = int(time.time())
    claims = {
        "iss": world.oidc.issuer,
        "aud": settings.oidc_client_id,
        "sub": "erin",
        "nonce": "nonce-of-this-sign-in",
        "iat": now,
        "exp": now + 600,
    }
    assert client.verify_id_token(world.oidc.sign(claims), "nonce-of-this-sign-in")["sub"] == "erin"
    other = RSAKey.generate_key(2048, parameters={"kid": "test-key-1"})
    refused = {
        "another key": (world.oidc.sign(claims, key=other), claims["nonce"]),
        "alg none": (_unsigned(claims), claims["nonce"]),
        "wrong aud": (world.oidc.sign({**claims, "aud": API_AUDIENCE}), claims["nonce"]),
        "wrong iss": (world.oidc.sign({**claims, "iss": "https://idp.example"}), claims["nonce"]),
        "expired": (world.oidc.sign({**claims, "exp": now - 3600}), claims["nonce"]),
        "replayed nonce": (world.oidc.sign(claims), "nonce-of-another-sign-in"),
        "no nonce": (world.oidc.sign({k: v for k, v in claims.items() if k != "nonce"}), ""),
    }
    for case, (token, nonce) in refused.items():
        with pytest.raises(IdentityRefused):
            client.verify_id_token(token, nonce)
            pytest.fail(f"{case} was accepted")
    client.close()


def test_mcp_tools_follow_the_directory_groups_too(world: World) -> None:
    """An agent behind the proxy reads what its person's groups may, through MCP."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def search(groups: str) -> str:
        headers = {PROXY_USER: "ivan@example.org", PROXY_GROUPS: groups}
        http = httpx2.AsyncClient(headers=headers, timeout=60)
        async with Client(streamable_http_client(f"{world.url}/mcp", http_client=http)) as client:
            result = await client.call_tool("search", {"query": "When does the project ship?"})
        return str(result.structured_content)

    assert SECRET in anyio.run(search, "engineering")
    # A new set of groups is a new sign-in through the proxy: the access follows at once.
    assert SECRET not in anyio.run(search, "sales")


def test_password_sign_in_can_be_turned_off(world: World, tmp_path, onnx_embedder) -> None:
    s = world.app.settings.identity
    settings = Settings.load(
        data_dir=tmp_path,
        password_sign_in=False,
        sign_up=True,
        ldap_url=s.ldap_url,
        ldap_ca_file=s.ldap_ca_file,
        ldap_bind_dn=s.ldap_bind_dn,
        ldap_bind_password=s.ldap_bind_password,
        ldap_search_base=s.ldap_search_base,
    )
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    AuthStore(app.catalog.engine).create_user("olga", "olga-local-password")
    with run_server(settings, onnx_embedder, app) as url, httpx.Client(base_url=url) as client:
        offered = client.get("/api/v1/auth/methods").json()
        assert offered["password"] is False and offered["ldap"] is True
        local = {"name": "olga", "password": "olga-local-password", "method": "password"}
        refused = client.post("/api/v1/auth/login", json=local)
        assert refused.status_code == 403 and "LDAP" in refused.json()["detail"]
        directory = {"name": "alice", "password": "alice-ldap-pass"}  # method: LDAP by default
        assert client.post("/api/v1/auth/login", json=directory).status_code == 200


def test_a_rotated_signing_key_is_fetched_when_a_token_names_it(world: World) -> None:
    from citewell.auth.identity.oidc import OidcClient

    client = OidcClient(world.app.settings.identity, "http://127.0.0.1:1/cb", refetch_after=0)
    now = int(time.time())
    claims = {"iss": world.oidc.issuer, "aud": API_AUDIENCE, "sub": "erin", "exp": now + 600}
    assert client.verify_access_token(world.oidc.sign(claims))["sub"] == "erin"
    world.oidc.rotate_key()  # the provider publishes a new key (and still the old one)
    assert client.verify_access_token(world.oidc.sign(claims))["sub"] == "erin"
    client.close()


def test_the_providers_words_never_reach_the_sign_in_page(world: World) -> None:
    """A refusal names a code; the page says fixed words for it (views/signin.js)."""
    said = "Your account is locked. Call +1 555 0100 to unlock it"
    with world.client() as browser:
        landed = browser.get(
            "/api/v1/auth/oidc/callback",
            params={"error": "access_denied", "error_description": said},
        )
    location = landed.headers["location"]
    assert "555" not in location and "locked" not in location and "access_denied" not in location
    assert _page_values(landed)[1] == {"code": "identity_provider_refused", "next": "/kbs"}


def test_oidc_without_the_public_url_fails_the_start(world: World) -> None:
    from citewell.errors import ConfigError

    settings = world.app.settings.identity
    with pytest.raises(ConfigError, match="public_url"):
        from citewell.auth.identity.oidc import OidcClient

        OidcClient(settings, "/api/v1/auth/oidc/callback")
