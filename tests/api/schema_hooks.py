"""Schemathesis hooks (loaded through SCHEMATHESIS_HOOKS by test_schema_fuzz.py): besides what
Schemathesis generates from the schema, every JSON body may have one of its strings extended
with a lone surrogate (which JSON allows and Python's text handling does not), a valid pair,
control characters, or tens of thousands of characters."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import strategies as st

ODD_TEXT = (
    "a \ud800 b",  # a lone high surrogate
    "\udfff",  # a lone low surrogate
    "\ud83d\ude00 pair",  # a valid pair: must stay as it is
    "\x00\x1b[31m\u202e",  # NUL, an escape sequence, a right-to-left override
    "typewriter " * 4_000,  # 44,000 characters
)


def _strings(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, str):
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _strings(v, (*path, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _strings(v, (*path, i))]
    return []


def _extended(value: Any, path: tuple[Any, ...], odd: str) -> Any:
    if not path:
        return value + odd
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _extended(value[path[0]], path[1:], odd)
    return copy


def _json_only(context: Any) -> bool:
    """Only JSON bodies: multipart ones cannot carry a surrogate (their client fails first)."""
    operation = getattr(context, "operation", None)
    body = getattr(operation, "body", None) or []
    return all("json" in getattr(payload, "media_type", "json") for payload in body)


@schemathesis.hook
def flatmap_body(context: Any, body: Any) -> Any:
    paths = _strings(body)
    if not paths or not _json_only(context):
        return st.just(body)
    keep = st.just(body)
    odd = st.tuples(st.sampled_from(paths), st.sampled_from(ODD_TEXT)).map(
        lambda pick: _extended(body, pick[0], pick[1])
    )
    return st.one_of(keep, odd)
