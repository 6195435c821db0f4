"""git connects by itself, so the guard's answer is pinned for it: a redirect to another
host is not followed (the other host sees no request), the address the guard checked is the
one git connects to (a name that only the guard's resolver knows still reaches it), and
ssh uses the connector's own key, never the server account's identity or config."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from citewell.errors import FetchFailed, InvalidInput
from citewell.fetch.guard import AddressGuard
from citewell.sources.connectors import SyncRequest
from citewell.sources.connectors.git import GitSource, _ssh_command


@dataclass
class Recorder:
    """A web server on a loopback address that logs each request and answers with
    ``redirect_to`` (a 301) or a 404."""

    host: str
    redirect_to: str = ""
    seen: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0


@pytest.fixture
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    """An allowed forge on 127.0.0.2 that redirects to an internal service on 127.0.0.1."""
    inner, outer = Recorder("127.0.0.1"), Recorder("127.0.0.2")
    running = []
    for recorder in (inner, outer):

        class Handler(BaseHTTPRequestHandler):
            log = recorder

            def do_GET(self) -> None:  # noqa: N802 - the standard library's name
                self.log.seen.append((self.path, self.headers.get("Host", "")))
                if self.log.redirect_to:
                    self.send_response(301)
                    self.send_header("Location", self.log.redirect_to + self.path)
                else:
                    self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer((recorder.host, 0), Handler)
        recorder.port = server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        running.append(server)
    outer.redirect_to = f"http://127.0.0.1:{inner.port}"
    try:
        yield inner, outer
    finally:
        for server in running:
            server.shutdown()
            server.server_close()


def _source(tmp_path: Path, resolver=None) -> GitSource:  # noqa: ANN001
    guard = AddressGuard.from_allowlist(["127.0.0.2/32"])
    if resolver is not None:
        guard = AddressGuard(guard.hosts, guard.networks, resolver=resolver)
    return GitSource(tmp_path / "cache", (), guard)


def test_a_redirect_to_another_host_is_not_followed(tmp_path: Path, servers) -> None:
    inner, outer = servers
    source = _source(tmp_path)
    with pytest.raises(FetchFailed):
        source.listing(SyncRequest(f"http://127.0.0.2:{outer.port}/team/repo.git"))
    assert outer.seen, "git asked the allowed host"
    assert inner.seen == [], "nothing reached the host the redirect named"


def test_git_connects_to_the_address_the_guard_checked(tmp_path: Path, servers) -> None:
    _, outer = servers
    outer.redirect_to = ""
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:  # the guard's view of the name, once
        asked.append(host)
        return ["127.0.0.2"]

    source = _source(tmp_path, resolver)
    url = f"http://forge.invalid:{outer.port}/team/repo.git"  # no DNS knows this name
    with pytest.raises(FetchFailed):
        source.listing(SyncRequest(url))  # the 404: the repository is not there
    assert outer.seen and outer.seen[0][1] == f"forge.invalid:{outer.port}"
    assert set(asked) == {"forge.invalid"}


def test_ssh_needs_the_connectors_own_key(tmp_path: Path) -> None:
    source = _source(tmp_path, lambda host, port: ["127.0.0.2"])
    with pytest.raises(InvalidInput, match="ssh_key"):
        source.check(SyncRequest("git@forge.invalid:team/repo.git"))
    request = SyncRequest("ssh://git@forge.invalid/team/repo.git", credentials={"ssh_key": "K"})
    connection = source.connection(request)
    with _ssh_command(connection, tmp_path / "cache") as command:
        key_file = Path(command.split("IdentityFile=", 1)[1].split()[0])
        assert key_file.read_text() == "K\n" and oct(key_file.stat().st_mode)[-3:] == "600"
        for option in ("-F /dev/null", "IdentitiesOnly=yes", "IdentityAgent=none"):
            assert option in command
        assert "HostName=127.0.0.2" in command
    assert not key_file.exists(), "the key lives only as long as the fetch"
    local = source.connection(SyncRequest("git@forge.invalid:team/repo.git", trusted=True))
    with _ssh_command(local, tmp_path / "cache") as command:  # the operator's own connector
        assert "IdentityFile" not in command and "HostName=127.0.0.2" in command
