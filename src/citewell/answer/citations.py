"""Checking the [n] markers of an answer against the sources it was given."""

from __future__ import annotations

import re
from collections.abc import Collection

MARKER = re.compile(r"\[(\d{1,3})\]")


def cited_numbers(text: str) -> list[int]:
    return [int(n) for n in MARKER.findall(text)]


def remove_invalid(text: str, valid: Collection[int]) -> tuple[str, list[int]]:
    """The text without markers that point at no source, and the numbers removed."""
    invalid: list[int] = []

    def keep(match: re.Match[str]) -> str:
        number = int(match.group(1))
        if number in valid:
            return match.group(0)
        invalid.append(number)
        return ""

    cleaned = MARKER.sub(keep, text)
    if invalid:
        cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)
        cleaned = re.sub(r"[ \t]{2,}", " ", cleaned)
    return cleaned, invalid
