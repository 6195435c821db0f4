"""An ASGI app served on 127.0.0.1 by uvicorn in a thread of this process, for tests and
benchmarks that talk to a real server over HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def served(
    asgi_app: Any, log_level: str = "warning", port: int = 0, start_seconds: float = 30.0
) -> Iterator[str]:
    """The app's base URL while the block runs; stopped after it. Proxy headers are left to
    the app, as `citewell serve` does (api/peer.py)."""
    import uvicorn

    config = uvicorn.Config(
        asgi_app, host="127.0.0.1", port=port, log_level=log_level, proxy_headers=False
    )
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_seconds
    while not running.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.05)
    bound = running.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{bound}"
    finally:
        running.should_exit = True
        thread.join(timeout=10)
