"""The ``git`` source kind: a repository any ``git`` can clone, at a branch, under a path.

The server keeps a bare clone per repository and branch in its data dir and fetches into it
before each sync. Entries are the tree's files (``git ls-tree``); a file's version is its
blob id, so a sync reads only blobs that changed, and a renamed file keeps its id (and its
embeddings). Remote URLs must be https, http, git or ssh, to a host the SSRF guard lets
through; a local path (or ``file://``) only under ``connector_allowed_paths``. Credentials
(a token) travel in git's environment, never on a command line.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from citewell.connectors.entries import Listing, SyncEntry, SyncRequest
from citewell.connectors.folder import check_local_path
from citewell.errors import FetchFailed, InvalidInput
from citewell.fetch.guard import AddressGuard
from citewell.loaders import supported_extensions

REMOTE_SCHEMES = ("https", "http", "git", "ssh")
SCP_LIKE = re.compile(r"^[\w.-]+@[\w.-]+:[^/\\].*$")  # user@host:path
TRANSPORT = re.compile(r"^[A-Za-z][\w+.-]*::")  # git's <transport>::<address> (ext::, fd::)
GIT_TIMEOUT = 600.0


def _repository(target: str, allowed: Sequence[Path], trusted: bool) -> tuple[str, str]:
    """(what git clones, the host to check or ""); raises for what may not be cloned."""
    if not target or target.startswith("-") or "\0" in target or TRANSPORT.match(target):
        raise InvalidInput(f"{target!r} is not a repository URL git may clone.")
    scheme = urlsplit(target).scheme.lower()
    if scheme == "file" or (not scheme and target.startswith(("/", "~"))):
        path = urlsplit(target).path if scheme == "file" else target
        return str(check_local_path(path, allowed, trusted)), ""
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

    def __init__(self, cache: Path, allowed: Sequence[Path], guard: AddressGuard) -> None:
        self.cache, self.allowed, self.guard = cache, tuple(allowed), guard

    def check(self, request: SyncRequest) -> None:
        url, host = _repository(request.target, self.allowed, request.trusted)
        if host:
            self._check_host(host)
        branch = request.options.get("branch", "")
        if branch and (branch.startswith("-") or not re.fullmatch(r"[\w./-]+", branch)):
            raise InvalidInput(f"{branch!r} is not a branch name.")

    def _check_host(self, host: str) -> None:
        try:
            addresses = self.guard.resolver(host, 443)
        except OSError as exc:
            raise FetchFailed(f"Cannot resolve {host!r}: {exc}; check the URL.") from exc
        for address in addresses:
            self.guard.check(host, address)  # raises UrlBlocked for loopback, metadata, ...

    def listing(self, request: SyncRequest) -> Listing:
        self.check(request)
        url, _ = _repository(request.target, self.allowed, request.trusted)
        clone = self._fetched(url, request.options.get("branch", ""), request.credentials)
        commit = _git(clone, request.credentials, "rev-parse", "FETCH_HEAD^{commit}").strip()
        base = request.options.get("path", "").strip("/")
        return Listing(self._entries(clone, commit, base), commit)

    def _fetched(self, url: str, branch: str, credentials: Mapping[str, str]) -> Path:
        """The bare clone of ``url`` with ``branch`` (the default branch if empty) fetched."""
        clone = self.cache / hashlib.sha256(url.encode()).hexdigest()[:24]
        if not (clone / "HEAD").exists():
            clone.mkdir(parents=True, exist_ok=True)
            _git(clone, credentials, "init", "--bare", "--quiet")
        ref = f"refs/heads/{branch}" if branch else "HEAD"
        _git(clone, credentials, "fetch", "--quiet", "--no-tags", "--depth=1", "--", url, ref)
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


def _environment(credentials: Mapping[str, str]) -> dict[str, str]:
    """git's environment: no prompts, no system or user config, only network protocols
    plus local paths (checked by the caller), and a token as an HTTP header."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/nonexistent",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_ALLOW_PROTOCOL": "https:http:git:ssh:file",
        "GIT_SSH_COMMAND": "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "protocol.ext.allow",
        "GIT_CONFIG_VALUE_0": "never",
    }
    token = credentials.get("token", "")
    if token:
        user = credentials.get("username", "x-access-token")
        basic = base64.b64encode(f"{user}:{token}".encode()).decode()
        env.update(
            GIT_CONFIG_COUNT="2",
            GIT_CONFIG_KEY_1="http.extraHeader",
            GIT_CONFIG_VALUE_1=f"Authorization: Basic {basic}",
        )
    return env


def _run_git(clone: Path, credentials: Mapping[str, str], *args: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(clone), *args],
            capture_output=True,
            env=_environment(credentials),
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchFailed(f"git {args[0]} failed: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise FetchFailed(f"git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout


def _git(clone: Path, credentials: Mapping[str, str], *args: str) -> str:
    return _run_git(clone, credentials, *args).decode(errors="surrogateescape")
