"""A real WebDAV server for tests: wsgidav on cheroot, on 127.0.0.1, over a folder of the
test's, optionally with a user and password (HTTP Basic). Stopped when the block ends."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serve_webdav(root: Path, user: str = "", password: str = "") -> Iterator[str]:
    """The URL of ``root`` as a WebDAV folder (".../dav", no trailing slash)."""
    from cheroot import wsgi
    from wsgidav.wsgidav_app import WsgiDAVApp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    users = {user: {"password": password}} if user else True  # True: anonymous access
    config = {
        "host": "127.0.0.1",
        "port": port,
        "provider_mapping": {"/dav": str(root)},
        "simple_dc": {"user_mapping": {"*": users}},
        "http_authenticator": {"accept_basic": True, "accept_digest": False},
        "verbose": 0,
        "logging": {"enable_loggers": []},
    }
    server = wsgi.Server(("127.0.0.1", port), WsgiDAVApp(config))
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/dav"
    finally:
        server.stop()
        thread.join(timeout=10)
