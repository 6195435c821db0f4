"""WebDAV connectors against a real WebDAV server (wsgidav on cheroot, started here on
127.0.0.1 over a temporary folder, with a password): adds, edits, renames and deletes in
nested folders; ETags say what changed, so an unchanged folder reads no file; a wrong
password fails the run with a reason; over the API, loopback is refused unless
web_fetch_allowlist names it, and a password in the URL is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from citewell.app import Citewell
from citewell.errors import FetchFailed, InvalidInput, UrlBlocked
from citewell.services.connectors import ConnectorSpec
from citewell.types import SearchMode
from tests.connector_helpers import api_connectors, kb_paths
from tests.webdav_server import serve_webdav

USER, PASSWORD = "alice", "app-password-1"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def dav(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A WebDAV server over ``share/``: (its URL for the folder, the folder)."""
    share = tmp_path / "share"
    share.mkdir()
    with serve_webdav(share, USER, PASSWORD) as url:
        yield f"{url}/team", share / "team"


def found(app: Citewell, query: str) -> str:
    return " ".join(h.chunk.text for h in app.search(query, ["kb"], SearchMode.BM25, 5))


def test_a_webdav_folder_syncs_adds_edits_renames_and_deletes(
    dav, tmp_path: Path, onnx_embedder
) -> None:
    url, team = dav
    write(
        team,
        {
            "handbook.md": "# Handbook\n\nNew staff get a Kestrel badge.",
            "policies/travel.txt": "Trains are booked two weeks ahead.",
            "policies/deep/expenses.md": "Receipts go to the Falcon desk.",
            ".hidden.md": "not synced",
            "photo.xyz": "not a type Citewell reads",
        },
    )
    app, service = api_connectors(tmp_path, onnx_embedder, web_fetch_allowlist="127.0.0.1")
    made = service.create(
        "kb",
        ConnectorSpec(
            "webdav", url, credentials={"username": USER, "token": PASSWORD}, name="team"
        ),
    )
    first = app.connectors.run(made.id)
    assert (first.added, first.failed) == (3, 0), first.errors
    assert kb_paths(app) == ["handbook.md", "policies/deep/expenses.md", "policies/travel.txt"]
    again = app.connectors.run(made.id)
    assert (again.unchanged, again.chunks_embedded) == (3, 0)

    # Another length: the server's ETag is size and mtime, and the mtime may not have moved
    # within the second (same-size edits in one second are one version to WebDAV too).
    (team / "handbook.md").write_text("# Handbook\n\nNew staff get an Osprey badge on day one.")
    (team / "policies" / "travel.txt").rename(team / "travel.txt")
    (team / "policies" / "deep" / "expenses.md").unlink()
    changed = app.connectors.run(made.id)
    assert (changed.updated, changed.added, changed.deleted) == (1, 1, 2)
    assert "Osprey" in found(app, "badge") and "Kestrel" not in found(app, "Kestrel")
    assert "Falcon" not in found(app, "Falcon desk")
    assert "Trains" in found(app, "Trains booked")
    assert not app.check(recall_samples=0).problems
    app.close()


def test_a_wrong_password_fails_the_run_with_its_reason(dav, tmp_path: Path, onnx_embedder):
    url, team = dav
    write(team, {"a.md": "A note."})
    app, service = api_connectors(tmp_path, onnx_embedder, web_fetch_allowlist="127.0.0.1")
    made = service.create(
        "kb", ConnectorSpec("webdav", url, credentials={"username": USER, "token": "wrong"})
    )
    with pytest.raises(FetchFailed, match="check its credentials"):
        app.connectors.run(made.id)
    status = app.connectors.store.get(made.id).status
    assert status.state == "failed" and "credentials" in status.message
    app.close()


def test_loopback_and_passwords_in_urls_are_refused(dav, tmp_path: Path, onnx_embedder):
    url, _ = dav
    app, service = api_connectors(tmp_path, onnx_embedder)  # no allow-list: loopback refused
    with pytest.raises(UrlBlocked):
        service.create("kb", ConnectorSpec("webdav", url))
    with pytest.raises(UrlBlocked):
        service.create("kb", ConnectorSpec("webdav", "http://169.254.169.254/dav/", name="m"))
    with pytest.raises(InvalidInput, match="credentials"):
        service.create("kb", ConnectorSpec("webdav", f"http://{USER}:pw@example.org/dav/"))
    with pytest.raises(InvalidInput, match="http or https"):
        service.create("kb", ConnectorSpec("webdav", "ftp://example.org/dav/", name="f"))
    app.close()
