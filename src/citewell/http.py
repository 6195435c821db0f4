"""Outbound HTTP shared by every remote component: POST with retries and backoff."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

RETRYABLE = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


def post_with_retries(
    client: httpx.Client,
    path: str,
    body: dict[str, Any],
    retries: int,
    unreachable: Callable[[httpx.HTTPError], Exception],
    refused: Callable[[httpx.Response], Exception],
) -> httpx.Response:
    """POST ``body``; retry transport errors and retryable statuses with exponential backoff.

    ``unreachable`` and ``refused`` build the (typed, actionable) error to raise at the end.
    """
    for attempt in range(retries + 1):
        last = attempt == retries
        try:
            response = client.post(path, json=body)
        except httpx.HTTPError as exc:
            if last:
                raise unreachable(exc) from exc
        else:
            if response.status_code < 400:
                return response
            if response.status_code not in RETRYABLE or last:
                raise refused(response)
        time.sleep(min(0.5 * 2**attempt, 8.0))
    raise AssertionError("unreachable")


def stream_lines(
    client: httpx.Client,
    path: str,
    body: dict[str, Any],
    refused: Callable[[httpx.Response], Exception],
    broken: Callable[[httpx.HTTPError], Exception],
) -> Iterator[str]:
    """POST ``body`` and yield the answer's lines as they arrive (SSE or NDJSON); an error
    status raises ``refused(response)``, a connection lost mid-way ``broken(error)``."""
    try:
        with client.stream("POST", path, json=body) as response:
            if response.status_code >= 400:
                response.read()
                raise refused(response)
            yield from response.iter_lines()
    except httpx.HTTPError as exc:
        raise broken(exc) from exc
