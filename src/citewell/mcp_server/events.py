"""Resumable MCP streams, kept per session: a client whose connection dropped reconnects with
``Last-Event-ID`` and gets what it missed, from its own session's events and nobody else's.

The SDK asks for one event store and hands it to every session it opens; ``SessionEvents``
gives each session a store of its own instead (``CallerSessions.event_store`` is read once
per new session), and a session is bound to the caller that opened it (``caller_token``).
So a client-chosen request id (0, 1, 2 …) names a stream only inside its own session, and an
event id carries a random part of the session's that another caller cannot guess. Bounded:
EVENTS_PER_STREAM events of each of the STREAMS most recent streams of a session."""

from __future__ import annotations

import itertools
import secrets
import threading
from collections import OrderedDict, deque
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import JSONRPCMessage

from citewell.auth.access import Access

EVENTS_PER_STREAM = 100
STREAMS = 100


class SessionEvents(EventStore):
    """The last events of one session's streams. Event ids are ``<stream>/<n>.<secret>``:
    an id without this session's secret replays nothing."""

    def __init__(self, per_stream: int = EVENTS_PER_STREAM, streams: int = STREAMS) -> None:
        self.per_stream, self.streams = per_stream, streams
        self.secret = secrets.token_urlsafe(16)
        self._events: OrderedDict[str, deque[tuple[int, JSONRPCMessage | None]]] = OrderedDict()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        with self._lock:
            number = next(self._numbers)
            kept = self._events.setdefault(stream_id, deque(maxlen=self.per_stream))
            kept.append((number, message))
            self._events.move_to_end(stream_id)
            while len(self._events) > self.streams:
                self._events.popitem(last=False)
        return self._event_id(stream_id, number)

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        stream_id, _, tail = last_event_id.rpartition("/")
        seen, _, secret = tail.partition(".")
        if not seen.isdigit() or not secrets.compare_digest(secret, self.secret):
            return None
        with self._lock:
            kept = list(self._events.get(stream_id, ()))
        if not kept:
            return None
        for number, message in kept:
            if number > int(seen) and message is not None:
                await send_callback(EventMessage(message, self._event_id(stream_id, number)))
        return stream_id

    def _event_id(self, stream_id: str, number: int) -> str:
        return f"{stream_id}/{number}.{self.secret}"


class CallerSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, with an event store of its own for each session it opens
    (the SDK reads ``event_store`` once per new session)."""

    @property
    def event_store(self) -> EventStore | None:
        return SessionEvents() if self._resumable else None

    @event_store.setter
    def event_store(self, value: Any) -> None:
        self._resumable = value is not None


def caller_token(access: Access) -> AuthenticatedUser:
    """The principal an MCP session is bound to: the user and the key (or the sign-in way
    without a key). The SDK answers a session used by any other principal as unknown."""
    user = access.user_id or "local"
    key = access.key.id if access.key is not None else "no-key"
    token = AccessToken(token="", client_id=f"{user}/{key}", scopes=[], subject=user)
    return AuthenticatedUser(token)
