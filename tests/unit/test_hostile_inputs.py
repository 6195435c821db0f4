"""Broken and malicious files: a typed error (or their text) quickly, never a crash or hang."""

from dataclasses import replace

import pytest

from citewell import errors
from citewell.errors import ParseError, PayloadTooLarge
from citewell.loaders import DocumentReader
from citewell.loaders.isolated import IsolatedReader, ReaderConfig
from tests.hostile import HOSTILE, huge_text


@pytest.fixture(scope="module")
def reader():
    return DocumentReader(ocr=None)


@pytest.fixture(scope="module")
def isolated():
    reader = IsolatedReader(ReaderConfig(ocr_engine="off", timeout=60))
    yield reader
    reader.close()


@pytest.mark.parametrize(("name", "make", "error"), HOSTILE)
def test_hostile_file_in_process(reader, name, make, error):
    if error is None:
        assert reader.read(make(), name).text.strip() == "deep text"
    else:
        with pytest.raises(getattr(errors, error)):
            reader.read(make(), name)


@pytest.mark.parametrize(("name", "make", "error"), HOSTILE)
def test_hostile_file_in_worker(isolated, name, make, error):
    if error is None:
        assert isolated.read(make(), name).text.strip() == "deep text"
    else:
        with pytest.raises(getattr(errors, error)):
            isolated.read(make(), name)


def test_encrypted_pdf_says_so(reader):
    from tests.hostile import encrypted_pdf

    with pytest.raises(ParseError, match="password"):
        reader.read(encrypted_pdf(), "locked.pdf")


def test_200_mb_text_file_is_refused_before_decoding(reader):
    with pytest.raises(PayloadTooLarge, match="max_document_chars"):
        reader.read(huge_text(200), "huge.txt")


def test_text_over_the_character_limit_is_refused():
    small = DocumentReader(ocr=None, max_chars=1000)
    with pytest.raises(PayloadTooLarge, match="max_document_chars"):
        small.read(b"<p>" + b"word " * 2000 + b"</p>", "long.html")


def test_worker_past_its_time_limit_is_stopped_and_replaced():
    config = ReaderConfig(ocr_engine="off", timeout=0.001)
    reader = IsolatedReader(config)
    try:
        with pytest.raises(ParseError, match="longer than"):
            reader.read(b"hello", "slow.txt")
        reader.config = replace(config, timeout=60)
        assert reader.read(b"hello again", "fine.txt").text == "hello again"
    finally:
        reader.close()


def test_worker_over_its_memory_limit_fails_cleanly():
    config = ReaderConfig(ocr_engine="off", memory_mb=600, max_chars=10**10, timeout=120)
    reader = IsolatedReader(config)
    try:
        with pytest.raises(ParseError, match="memory"):
            reader.read(huge_text(200), "huge.txt")
        assert reader.read(b"still alive", "ok.txt").text == "still alive"
    finally:
        reader.close()


def test_a_batch_read_in_the_worker_answers_each_file_as_a_read_alone(isolated):
    files = [(make(), name) for name, make, _ in HOSTILE]
    outcomes = isolated.read_many(files)
    assert len(outcomes) == len(HOSTILE)
    for (name, _, error), outcome in zip(HOSTILE, outcomes, strict=True):
        if error is None:
            assert outcome.text.strip() == "deep text", name
        else:
            assert type(outcome) is getattr(errors, error), name


def test_a_batch_read_in_process_answers_each_file(reader):
    outcomes = reader.read_many([(b"first words", "a.txt"), (b"", "empty.txt")])
    assert outcomes[0].text == "first words"
    assert isinstance(outcomes[1], ParseError) and "empty" in outcomes[1].message


def test_a_file_that_kills_the_worker_fails_alone_in_its_batch():
    config = ReaderConfig(ocr_engine="off", memory_mb=600, max_chars=10**10, timeout=120)
    reader = IsolatedReader(config)
    try:
        files = [(b"before it", "a.txt"), (huge_text(200), "huge.txt"), (b"after it", "b.txt")]
        before, huge, after = reader.read_many(files)
        assert (before.text, after.text) == ("before it", "after it")
        assert isinstance(huge, ParseError) and "memory" in huge.message
    finally:
        reader.close()


def test_a_batch_past_the_time_limit_is_read_again_a_file_at_a_time():
    config = ReaderConfig(ocr_engine="off", timeout=0.001)
    reader = IsolatedReader(config)
    try:
        outcomes = reader.read_many([(b"one", "one.txt"), (b"two", "two.txt")])
        assert [type(o) for o in outcomes] == [ParseError, ParseError]
        assert all("longer than" in o.message and o.message.startswith(n) for o, n in
                   zip(outcomes, ["one.txt", "two.txt"], strict=True))  # fmt: skip
    finally:
        reader.close()


def test_a_batch_answers_fast_files_together_and_a_slow_one_at_once(monkeypatch):
    """The worker's side of ``read_many``: the caller's time limit applies to each file."""
    import time

    from citewell.loaders import isolated as worker

    sent: list[list[str]] = []

    class Pipe:
        def send(self, message):
            sent.append([answer[1] for answer in message[1]])

    def answer(config, readers, message, after, index):
        if message[2] == "slow.txt":
            time.sleep(worker.SEND_AFTER + 0.1)
        return ("ok", message[2])

    monkeypatch.setattr(worker, "_answer", answer)
    names = ["a.txt", "slow.txt", "b.txt", "c.txt"]
    worker._read_many(Pipe(), ReaderConfig(), [], [(b"x", name) for name in names])
    assert sent == [["a.txt", "slow.txt"], ["b.txt", "c.txt"]]
