"""Draining on SIGTERM for load balancers: keep serving ``shutdown_drain_seconds`` while
``/readyz`` answers 503, so the balancer stops sending requests before this process stops
accepting them; then uvicorn's own graceful shutdown runs (requests in flight finish, the job
worker hands back what it holds). A second SIGTERM, or SIGINT, stops at once.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

log = logging.getLogger(__name__)


class Drain:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._started = threading.Event()

    @property
    def draining(self) -> bool:
        return self._started.is_set()

    def install(self) -> None:
        """Take SIGTERM over from uvicorn's handler (which it installed before the app
        started), delaying it by ``seconds``. Only the main thread may handle signals: a
        server run in a thread (tests) keeps uvicorn's behaviour."""
        if self.seconds <= 0 or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGTERM)
        if not callable(previous):
            return

        def on_term(sig: int, frame: FrameType | None) -> None:
            if self.draining:  # asked twice: stop now
                previous(sig, frame)
                return
            self._started.set()
            log.info(
                "draining for %.0f s: /readyz answers 503, requests are still served", self.seconds
            )
            timer = threading.Timer(self.seconds, previous, (sig, frame))
            timer.daemon = True
            timer.start()

        signal.signal(signal.SIGTERM, on_term)
