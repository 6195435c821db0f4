"""Schemathesis hooks (loaded through SCHEMATHESIS_HOOKS by test_schema_fuzz.py): besides what
Schemathesis generates from the schema, every JSON body may have one of its strings extended
with a character beyond the BMP (a surrogate pair on the wire), control characters, or tens
of thousands of characters; or one of its numbers replaced by an edge case: negative, past
32 and 64 bits, or huge. (NaN and Infinity cannot go through Schemathesis' client, which
writes strict JSON; test_side_channels sends them raw.)

Lone surrogates are not among them: Schemathesis keeps request values to reuse in its
stateful phase and fails on text Python cannot encode (an error inside Schemathesis, not an
answer of ours). Every JSON body passes one cleaner (api/hygiene.py), which
test_hardening.py and tests/unit/test_limits.py hold to lone surrogates."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import strategies as st

ODD_TEXT = (
    "\U0001f600 pair",  # a surrogate pair in JSON's escapes: must stay as it is
    "\x00\x1b[31m\u202e",  # NUL, an escape sequence, a right-to-left override
    "typewriter " * 4_000,  # 44,000 characters
)


ODD_NUMBERS = (
    -1,
    -(2**63),
    2**31,
    2**63,
    10**30,
    1e308,
    -1e308,
    0.5,
)


def _paths(value: Any, kind: tuple[type, ...], path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where in ``value`` the leaves of ``kind`` are (bools are not numbers here)."""
    if isinstance(value, kind) and not isinstance(value, bool):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _paths(v, kind, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _paths(v, kind, (*path, i))]
    return []


def _changed(value: Any, path: tuple[Any, ...], change: Any) -> Any:
    if not path:
        return change(value)
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _changed(value[path[0]], path[1:], change)
    return copy


def _json_only(context: Any) -> bool:
    """Only JSON bodies: multipart ones cannot carry a surrogate (their client fails first)."""
    operation = getattr(context, "operation", None)
    body = getattr(operation, "body", None) or []
    return all("json" in getattr(payload, "media_type", "json") for payload in body)


@schemathesis.hook
def flatmap_body(context: Any, body: Any) -> Any:
    if not _json_only(context):
        return st.just(body)
    choices = [st.just(body)]
    texts, numbers = _paths(body, (str,)), _paths(body, (int, float))
    if texts:
        choices.append(
            st.tuples(st.sampled_from(texts), st.sampled_from(ODD_TEXT)).map(
                lambda pick: _changed(body, pick[0], lambda text: text + pick[1])
            )
        )
    if numbers:
        choices.append(
            st.tuples(st.sampled_from(numbers), st.sampled_from(ODD_NUMBERS)).map(
                lambda pick: _changed(body, pick[0], lambda _: pick[1])
            )
        )
    return st.one_of(*choices)
