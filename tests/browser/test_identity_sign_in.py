"""Signing in to the web page with the company's identity, in a real Chromium: through the
OpenID provider's own login page (the npm oidc-provider under Node) and with a directory
password (Debian's slapd); a refusal comes back to the page with its reason."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.config import Settings
from citewell.testing.ldap_server import LdapServer, Person
from citewell.testing.oidc_server import OidcPerson, OidcServer
from citewell.testing.processes import free_port
from tests.api.conftest import run_server
from tests.browser.conftest import Site


@pytest.fixture(scope="module")
def site(tmp_path_factory, onnx_embedder) -> Iterator[Site]:
    with ExitStack() as started:  # each server stops, also when a later one fails to start
        ldap = LdapServer()
        ldap.start()
        started.callback(ldap.stop)
        ldap.seed([Person("lena", "lena-ldap-pass", "Lena Olin", ("engineering",))])
        port = free_port()
        oidc = OidcServer([f"http://127.0.0.1:{port}/api/v1/auth/oidc/callback"])
        oidc.set_people(
            [
                OidcPerson("erin", "erin-idp-pass", "erin@example.org", ["engineering"]),
                OidcPerson("mallory", "mallory-idp-pass", "mallory@example.org"),
            ]
        )
        oidc.start()
        started.callback(oidc.stop)
        settings = Settings.load(
            data_dir=tmp_path_factory.mktemp("identity-web"),
            **ldap.settings(),
            **oidc.settings(f"http://127.0.0.1:{port}"),
        )
        assert not settings.identity.sign_up  # only people an admin made get in
        app = Citewell.from_settings(settings, embedder=onnx_embedder)
        users = AuthStore(app.catalog.engine)
        for name in ("erin", "lena"):
            users.create_user(name)  # by an admin, without a password: the provider vouches
        with run_server(settings, onnx_embedder, app, port=port) as url:
            yield Site(url, app, tmp_path_factory.mktemp("unused-shares"))


def _provider_login(page, name: str, password: str) -> None:
    page.get_by_role("link", name="Sign in with Example IdP").click()
    page.get_by_role("heading", name="Example identity provider").wait_for()
    page.get_by_label("Username").fill(name)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Continue").click()


def test_signing_in_through_the_identity_provider(page, site, artifacts) -> None:
    page.goto(site.url + "/#/chat")
    page.get_by_role("heading", name="Sign in to Citewell").wait_for()
    page.screenshot(path=str(artifacts / "sign-in-methods.png"), full_page=True)
    _provider_login(page, "erin", "erin-idp-pass")
    page.get_by_role("heading", name="Chat", level=1).wait_for()  # back where she started
    assert page.get_by_text("Signed in as erin", exact=True).is_visible()
    assert "ticket" not in page.url
    key = page.evaluate("localStorage.getItem('citewell.key')")
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("heading", name="Sign in to Citewell").wait_for()
    gone = page.request.get(
        site.url + "/api/v1/auth/me", headers={"Authorization": f"Bearer {key}"}
    )
    assert gone.status == 401  # signing out ended the session key
    assert page.problems == []  # type: ignore[attr-defined]


def test_a_person_without_an_account_is_told_why(page, site) -> None:
    page.goto(site.url + "/")
    _provider_login(page, "mallory", "mallory-idp-pass")
    page.get_by_role("heading", name="Sign in to Citewell").wait_for()
    page.get_by_text("you have no Citewell account yet").wait_for()
    assert "mallory" not in {u.name for u in AuthStore(site.app.catalog.engine).list_users()}


def test_signing_in_with_a_directory_password(page, site) -> None:
    page.goto(site.url + "/")
    form = page.locator("form", has=page.get_by_role("heading", name="With your name and password"))
    form.get_by_label("Account").select_option("ldap")
    form.get_by_label("Name").fill("lena")
    form.get_by_label("Password").fill("lena-ldap-pass")
    form.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Knowledge bases", level=1).wait_for()
    assert page.get_by_text("Signed in as lena", exact=True).is_visible()
