"""BM25 terms made on the other core while an import writes: in a process of its own.

Making terms is most of an import's own Python work (5.6 of its 30 s at 200,000 chunks). A
thread would not help: it holds the GIL that the threads waiting on LanceDB and the disk
need between their system calls (tried: the import got slower, docs/benchmarks/journal.md,
"An import that stays fast"). The first group's terms are made here, while the process
starts, so a short import starts none; terms the process fails to make are made here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import TypeVar

from citewell.retrieval.tokenize import terms_strings

log = logging.getLogger(__name__)
T = TypeVar("T")


def _here(texts: list[str], stemmer: str) -> list[str]:
    return terms_strings(texts, stemmer)


def with_terms_ahead(
    groups: Iterable[T], texts_of: Callable[[T], list[str]], stemmer: str
) -> Generator[tuple[T, list[str]], None, None]:
    """Each group with the BM25 terms of ``texts_of(group)``; from the second group on, the
    next group's terms are made in another process while the caller uses this one's."""
    stream = iter(groups)
    first = next(stream, None)
    if first is None:
        return
    second = next(stream, None)
    if second is None:
        yield first, _here(texts_of(first), stemmer)
        return
    with _TermsProcess(stemmer) as process:
        ahead = process.submit(texts_of(second))
        yield first, _here(texts_of(first), stemmer)
        current = second
        for following in stream:
            after = process.submit(texts_of(following))
            yield current, process.result(*ahead)
            current, ahead = following, after
        yield current, process.result(*ahead)


class _TermsProcess:
    def __init__(self, stemmer: str) -> None:
        self.stemmer = stemmer
        # spawn: forking a process that runs LanceDB's threads is not safe
        self.pool = ProcessPoolExecutor(1, mp_context=get_context("spawn"))
        self.failed = False

    def submit(self, texts: list[str]) -> tuple[list[str], Future[list[str]] | None]:
        if self.failed:
            return texts, None
        return texts, self.pool.submit(terms_strings, texts, self.stemmer)

    def result(self, texts: list[str], made: Future[list[str]] | None) -> list[str]:
        if made is not None and not self.failed:
            try:
                return made.result()
            except Exception as error:  # noqa: BLE001 - the terms are made here instead
                log.warning("Making BM25 terms in another process failed (%s); making them "
                            "here.", error)  # fmt: skip
                self.failed = True
        return _here(texts, self.stemmer)

    def __enter__(self) -> _TermsProcess:
        return self

    def __exit__(self, *failure: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
