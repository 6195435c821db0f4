"""Work on a file's Document done where it was read (``read_each``): in a reader's worker
process when extraction is isolated, so that its Python runs off the server's GIL."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from citewell.errors import CitewellError, ParseError
from citewell.types import Document

logger = logging.getLogger(__name__)
T = TypeVar("T")
# Given the document and its place among the files sent together; picklable.
AfterRead = Callable[[Document, int], T]


def as_read(document: Document, index: int) -> Document:
    """The document itself: ``read_many`` as ``read_each``."""
    del index
    return document


def after_read(after: AfterRead[T], document: Document, index: int) -> T:
    """``after(document, index)``; a failure is the file's error, as a parser's is."""
    try:
        return after(document, index)
    except CitewellError:
        raise
    except Exception as exc:  # a bug on odd text is this file's failure, not the batch's
        logger.warning("processing %s after reading failed", document.name, exc_info=True)
        raise ParseError(
            f"{document.name} was read but could not be split ({type(exc).__name__}: {exc})."
        ) from exc
