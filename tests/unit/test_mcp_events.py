"""Resumable MCP streams: what a stream sent after the client's last event is sent again,
in order; unknown or evicted streams replay nothing; memory stays bounded."""

from __future__ import annotations

import anyio
from mcp_types import JSONRPCNotification

from citewell.mcp_server.events import RecentEvents


def _note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})


def test_events_after_the_last_seen_are_replayed_in_order():
    async def scenario() -> tuple[list[str], str | None, str | None, list[str]]:
        store = RecentEvents(per_stream=3, streams=2)
        ids = [await store.store_event("s1", _note(n)) for n in range(4)]
        await store.store_event("s2", _note(9))
        sent: list[str] = []

        async def send(event) -> None:
            sent.append(event.event_id)

        stream = await store.replay_events_after(ids[1], send)
        await store.store_event("s3", _note(10))  # s1 is now the oldest of three: evicted
        gone = await store.replay_events_after(ids[1], send)
        return sent, stream, gone, ids

    sent, stream, gone, ids = anyio.run(scenario)
    assert stream == "s1" and sent == ids[2:]
    assert gone is None
