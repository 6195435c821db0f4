"""The ``git`` source kind: a repository any ``git`` can clone, at a branch, under a path.

The server keeps a bare clone per repository and branch in its data dir and fetches into it
before each sync. Entries are the tree's files (``git ls-tree``); a file's version is its
blob id, so a sync reads only blobs that changed, and a renamed file keeps its id (and its
embeddings). Remote URLs must be https, http, git or ssh, to a host the SSRF guard lets
through; a local path (or ``file://``) only where a folder connector may read. Credentials
(a token) travel in git's environment, never on a command line.

git connects by itself, so the guard's answer is pinned for it: the host is resolved and
checked once, and git is told to use that address (curl's resolve list for http(s), the
address in the URL for git://, ssh's HostName); redirects are not followed. Over ssh only a
key given to the connector is used (``ssh_key``), never the server account's own identity,
agent or ssh config; the local operator's connectors may use the account's.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from citewell.errors import FetchFailed, InvalidInput
from citewell.fetch.guard import AddressGuard
from citewell.loaders import supported_extensions
from citewell.sources.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.sources.connectors.folder_grants import FolderGrants

REMOTE_SCHEMES = ("https", "http", "git", "ssh")
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:[^/\\].*$")  # user@host:path
TRANSPORT = re.compile(r"^[A-Za-z][\w+.-]*::")  # git's <transport>::<address> (ext::, fd::)
GIT_TIMEOUT = 600.0


DEFAULT_PORTS = {"https": 443, "http": 80, "git": 9418, "ssh": 22}


@dataclass(frozen=True)
class Connection:
    """How git reaches a checked remote: the URL to give it, extra ``-c`` settings, and for
    ssh the address to connect to (HostName) and whether the account's identity may serve."""

    url: str
    origin: str  # the URL as the connector names it: its clone is kept under this
    config: tuple[tuple[str, str], ...] = ()
    ssh_address: str = ""
    ssh_key: str = ""
    account_ssh: bool = False


def _repository(target: str, grants: FolderGrants, request: SyncRequest) -> tuple[str, str]:
    """(what git clones, the host to check or ""); raises for what may not be cloned."""
    if not target or target.startswith("-") or "\0" in target or TRANSPORT.match(target):
        raise InvalidInput(f"{target!r} is not a repository URL git may clone.")
    scheme = urlsplit(target).scheme.lower()
    if scheme == "file" or (not scheme and target.startswith(("/", "~"))):
        path = urlsplit(target).path if scheme == "file" else target
        return str(grants.check(path, request)), ""
    if SCP_LIKE.match(target):
        return target, target.split("@", 1)[1].split(":", 1)[0]
    if scheme not in REMOTE_SCHEMES:
        raise InvalidInput(
            f"{target!r}: a repository is an https, http, git or ssh URL (or a local path "
            "under connector_allowed_paths)."
        )
    host = urlsplit(target).hostname or ""
    if not host:
        raise InvalidInput(f"{target!r} names no host.")
    return target, host


class GitSource:
    """Repositories through the ``git`` command, cloned under ``cache``."""

    def __init__(self, cache: Path, grants: FolderGrants, guard: AddressGuard) -> None:
        self.cache, self.grants, self.guard = cache, grants, guard

    def check(self, request: SyncRequest) -> None:
        self._checked(request)

    def _checked(self, request: SyncRequest) -> tuple[str, str, str]:
        """(what git clones, its host or "", the checked address or "") if it may be."""
        url, host = _repository(request.target, self.grants, request)
        address = self._address(host, url) if host else ""
        if _is_ssh(url) and not request.trusted and not request.credentials.get("ssh_key"):
            raise InvalidInput(
                "An ssh repository needs a key of its own: put a private key the forge "
                "accepts (a deploy key) in the connector's credentials as ssh_key. The "
                "server's own ssh identity is never used for a connector."
            )
        branch = request.options.get("branch", "")
        if branch and (branch.startswith("-") or not re.fullmatch(r"[\w./-]+", branch)):
            raise InvalidInput(f"{branch!r} is not a branch name.")
        return url, host, address

    def _address(self, host: str, url: str) -> str:
        """The one address git will use for ``host``: every address checked, the first."""
        port = urlsplit(url).port or DEFAULT_PORTS.get(urlsplit(url).scheme.lower(), 22)
        try:
            addresses = self.guard.resolver(host, port)
        except OSError as exc:
            raise FetchFailed(f"Cannot resolve {host!r}: {exc}; check the URL.") from exc
        if not addresses:
            raise FetchFailed(f"Cannot resolve {host!r}; check the URL.")
        for address in addresses:
            self.guard.check(host, address)  # raises UrlBlocked for loopback, metadata, ...
        return addresses[0]

    def connection(self, request: SyncRequest) -> Connection:
        """What git is given for ``request``: the checked address pinned, no redirects."""
        url, host, address = self._checked(request)
        if not host:
            return Connection(url, url)
        key = request.credentials.get("ssh_key", "")
        if _is_ssh(url):
            return Connection(
                url, url, ssh_address=address, ssh_key=key, account_ssh=request.trusted
            )
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORTS[parts.scheme.lower()]
        shown = f"[{address}]" if ":" in address else address
        if parts.scheme.lower() == "git":  # git's own protocol: connect to the address itself
            netloc = f"{shown}:{port}"
            return Connection(urlunsplit(parts._replace(netloc=netloc)), url)
        resolve = f"{host}:{port}:{shown}"
        return Connection(url, url, (("http.curloptResolve", resolve),))

    def listing(self, request: SyncRequest) -> Listing:
        connection = self.connection(request)
        clone = self._fetched(connection, request.options.get("branch", ""), request.credentials)
        commit = _git(clone, {}, "rev-parse", "FETCH_HEAD^{commit}").strip()
        base = request.options.get("path", "").strip("/")
        return Listing(self._entries(clone, commit, base), commit)

    def _fetched(self, connection: Connection, branch: str, credentials: Mapping[str, str]) -> Path:
        """The bare clone of the URL with ``branch`` (the default branch if empty) fetched."""
        clone = self.cache / hashlib.sha256(connection.origin.encode()).hexdigest()[:24]
        if not (clone / "HEAD").exists():
            clone.mkdir(parents=True, exist_ok=True)
            _git(clone, {}, "init", "--bare", "--quiet")
        ref = f"refs/heads/{branch}" if branch else "HEAD"
        with _ssh_command(connection, self.cache) as ssh:
            extra = dict(connection.config) | ({"core.sshCommand": ssh} if ssh else {})
            fetch = ("fetch", "--quiet", "--no-tags", "--depth=1", "--", connection.url, ref)
            _git(clone, credentials, *fetch, config=extra)
        return clone

    def _entries(self, clone: Path, commit: str, base: str) -> Iterator[SyncEntry]:
        wanted = supported_extensions()
        spec = [f"{commit}:{base}" if base else commit]
        listed = _git(clone, {}, "ls-tree", "-r", "-z", "--full-tree", *spec)
        for record in listed.split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            mode, kind, blob = meta.split()
            name = path.rsplit("/", 1)[-1]
            if kind != "blob" or mode == "120000" or name.startswith("."):
                continue  # submodules, symlinks and hidden files are not documents
            if any(part.startswith(".") for part in path.split("/")[:-1]):
                continue
            if Path(name).suffix.lower() not in wanted:
                continue
            yield SyncEntry(path, blob, _blob_reader(clone, blob))


def _blob_reader(clone: Path, blob: str) -> Callable[[], bytes]:
    def read() -> bytes:
        return _run_git(clone, {}, "cat-file", "blob", blob)

    return read


def _is_ssh(url: str) -> bool:
    return urlsplit(url).scheme.lower() == "ssh" or bool(SCP_LIKE.match(url))


@contextmanager
def _ssh_command(connection: Connection, cache: Path) -> Iterator[str]:
    """ssh as git runs it for ``connection`` ("" when not ssh): no ssh config, agent or
    identity of the account (unless the local operator's), the connector's key from a file
    that lives only as long as the fetch, and the checked address."""
    if not connection.ssh_address:
        yield ""
        return
    options = ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new"]
    options += ["-o", f"HostName={connection.ssh_address}"]
    if connection.account_ssh and not connection.ssh_key:
        yield shlex.join(["ssh", *options])
        return
    cache.mkdir(parents=True, exist_ok=True)
    known = cache / "known_hosts"
    with tempfile.TemporaryDirectory(dir=cache) as folder:
        key = Path(folder) / "key"
        key.touch(mode=0o600)
        key.write_text(connection.ssh_key.strip() + "\n")
        options = ["-F", "/dev/null", *options, "-o", "IdentitiesOnly=yes"]
        options += ["-o", "IdentityAgent=none", "-o", f"IdentityFile={key}"]
        options += ["-o", f"UserKnownHostsFile={known}"]
        yield shlex.join(["ssh", *options])


def _environment(credentials: Mapping[str, str], config: Mapping[str, str]) -> dict[str, str]:
    """git's environment: no prompts, no system or user config, only network protocols
    plus local paths (checked by the caller), no redirects, ``config`` (the pinned address,
    the ssh command), and a token as an HTTP header."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_ALLOW_PROTOCOL": "https:http:git:ssh:file",
    }
    settings = {"protocol.ext.allow": "never", "http.followRedirects": "false", **config}
    token = credentials.get("token", "")
    if token:
        user = credentials.get("username", "x-access-token")
        basic = base64.b64encode(f"{user}:{token}".encode()).decode()
        settings["http.extraHeader"] = f"Authorization: Basic {basic}"
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for i, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def _run_git(
    clone: Path, credentials: Mapping[str, str], *args: str, config: Mapping[str, str] = {}
) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(clone), *args],
            capture_output=True,
            env=_environment(credentials, config),
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchFailed(f"git {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise FetchFailed(f"git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout


def _git(
    clone: Path, credentials: Mapping[str, str], *args: str, config: Mapping[str, str] = {}
) -> str:
    return _run_git(clone, credentials, *args, config=config).decode(errors="surrogateescape")
