"""The web page in a real browser: Playwright driving Debian's chromium (headless), against a
real Citewell server on 127.0.0.1 with sign-in required. Screenshots of each page go to
``$CITEWELL_ARTIFACTS`` (default: the test's tmp dir), never into the repository."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from citewell.app import Citewell
from citewell.auth import AuthStore
from citewell.config import Settings
from tests.api.conftest import run_server

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError(
        "No Chromium found: the browser tests drive Debian's chromium "
        "(apt-get install chromium; scripts/test installs it when run as root)."
    )


@dataclass
class Site:
    url: str
    app: Citewell
    shares: Path
    admin_password: str = "admin-password-1"
    user_password: str = "user-password-1"


@pytest.fixture(scope="module")
def site(tmp_path_factory, onnx_embedder) -> Iterator[Site]:
    data = tmp_path_factory.mktemp("web-data")
    shares = tmp_path_factory.mktemp("web-shares")  # folders connectors may sync
    settings = Settings.load(data_dir=data, auth="required", connector_allowed_paths=str(shares))
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    users = AuthStore(app.catalog.engine)
    site = Site("", app, shares)
    users.create_user("ada", site.admin_password, role="admin")
    users.create_user("bob", site.user_password)
    with run_server(settings, onnx_embedder, app) as url:
        site.url = url
        yield site


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True, args=["--no-sandbox"]
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser, site) -> Iterator[object]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: problems.append(m.text) if is_problem(m) else None)
    page.problems = problems  # type: ignore[attr-defined]
    yield page
    context.close()


def is_problem(message) -> bool:
    """Console errors, except the 401 of asking who one is before signing in."""
    return message.type == "error" and "status of 401" not in message.text


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory) -> Path:
    folder = os.environ.get("CITEWELL_ARTIFACTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path
