"""Resumable MCP streams: the last events of each stream, kept in this process, so a client
whose connection dropped reconnects with ``Last-Event-ID`` and gets what it missed. Bounded:
EVENTS_PER_STREAM events of each of the STREAMS most recent streams."""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict, deque

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage

EVENTS_PER_STREAM = 100
STREAMS = 1000


class RecentEvents(EventStore):
    def __init__(self, per_stream: int = EVENTS_PER_STREAM, streams: int = STREAMS) -> None:
        self.per_stream, self.streams = per_stream, streams
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
        return f"{stream_id}/{number}"

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        stream_id, _, seen = last_event_id.rpartition("/")
        with self._lock:
            kept = list(self._events.get(stream_id, ()))
        if not kept or not seen.isdigit():
            return None
        for number, message in kept:
            if number > int(seen) and message is not None:
                await send_callback(EventMessage(message, f"{stream_id}/{number}"))
        return stream_id
