"""Names people give things (KBs, users, groups, keys): printable text only.

A control character in a name (a newline, an escape sequence, a right-to-left override)
would show one thing in a listing, a log line or a terminal and be another; such a name is
refused with a 400 that says which character.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator, Field

# Bidirectional overrides and isolates reorder the text around them (Unicode Cf).
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(value: str) -> str:
    for position, character in enumerate(value):
        if unicodedata.category(character) == "Cc" or character in BIDI_CONTROLS:
            raise ValueError(
                f"names may not hold control characters; found U+{ord(character):04X} at "
                f"position {position}. Use printable text."
            )
    return value


Name = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(printable)]
OptionalName = Annotated[str, Field(max_length=200), AfterValidator(printable)]
