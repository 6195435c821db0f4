"""Resumable MCP streams: what a stream sent after the client's last event is sent again,
in order; unknown or evicted streams replay nothing; memory stays bounded; an event id of
another session (or one guessed) replays nothing."""

from __future__ import annotations

import anyio
from mcp_types import JSONRPCNotification

from citewell.mcp_server.events import CallerSessions, SessionEvents


def _note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"n": n})


def test_events_after_the_last_seen_are_replayed_in_order():
    async def scenario() -> tuple[list[str], str | None, str | None, list[str]]:
        store = SessionEvents(per_stream=3, streams=2)
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


def test_another_sessions_or_a_guessed_event_id_replays_nothing():
    async def scenario() -> list[str | None]:
        alice, bob = SessionEvents(), SessionEvents()
        alices = await alice.store_event("3", _note(1))
        await alice.store_event("3", _note(2))
        sent: list[str] = []

        async def send(event) -> None:
            sent.append(event.event_id)

        answers = [
            await bob.replay_events_after(alices, send),  # alice's real id, bob's session
            await alice.replay_events_after("3/0", send),  # the old guessable form
            await alice.replay_events_after("3/0.wrong", send),
        ]
        assert sent == []
        answers.append(await alice.replay_events_after(alices, send))
        assert len(sent) == 1
        return answers

    assert anyio.run(scenario) == [None, None, None, "3"]


def test_each_session_gets_a_store_of_its_own():
    sessions = CallerSessions(app=None, event_store=SessionEvents())  # type: ignore[arg-type]
    first, second = sessions.event_store, sessions.event_store
    assert isinstance(first, SessionEvents) and isinstance(second, SessionEvents)
    assert first is not second and first.secret != second.secret
    assert CallerSessions(app=None, event_store=None).event_store is None  # type: ignore[arg-type]
