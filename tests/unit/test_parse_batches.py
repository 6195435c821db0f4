"""A claim's files are parsed in batches (ingest.preload): small files together, in one
round trip to a reader process; every file's future is answered, whatever the reader does."""

from __future__ import annotations

from citewell.errors import ParseError
from citewell.ingest.chunk_rows import ChunkRows, sha256
from citewell.ingest.preload import ALONE_BYTES, BATCH_FILES, batches
from citewell.ingest.run import ParseTask, Parsing, prepare_files
from citewell.loaders import DocumentReader
from citewell.sources import text_item


def task(name: str, size: int = 10) -> ParseTask:
    data = b"x" * size
    return ParseTask(text_item(name, "x"), data, sha256(data))


def test_small_files_go_together_and_big_ones_alone():
    tasks = [task(f"f{i}.md") for i in range(5)] + [task("big.pdf", ALONE_BYTES + 1)]
    made = batches(tasks, workers=1)
    assert [len(b) for b in made] == [3, 1, 2]  # two batches a worker: three files a batch
    assert [t.item.name for t in made[1]] == ["big.pdf"]


def test_a_batch_holds_at_most_batch_files():
    made = batches([task(f"f{i}.md") for i in range(10 * BATCH_FILES)], workers=2)
    assert {len(b) for b in made} == {BATCH_FILES}


def test_one_file_makes_one_batch():
    assert [len(b) for b in batches([task("one.md")], workers=4)] == [1]


class ShortReader(DocumentReader):
    """A reader whose batch answer misses its last file (a bug it must survive)."""

    def read_many(self, files):
        return super().read_many(files)[:-1]

    def read_each(self, files, after):
        return super().read_each(files, after)[:-1]


def parsing(reader: DocumentReader) -> Parsing:
    return Parsing(reader, ChunkRows("english"), lambda tenant, digest: f"{tenant}-{digest}")


def test_each_file_gets_its_result_or_its_own_error(settings):
    from citewell.app import Citewell
    from citewell.testing.fakes import FakeHashEmbedder

    app = Citewell.from_settings(settings, embedder=FakeHashEmbedder(16))
    kb = app.create_kb("notes")
    targets = app.ingestor.sets.targets(kb.id, app.ingestor.embedder)
    items = [("a.md", b"# A\n\nAbout herons."), ("empty.txt", b""), ("c.md", b"About coots.")]
    tasks = [ParseTask(text_item(n, ""), data, sha256(data)) for n, data in items]
    prepare_files(parsing(ShortReader(ocr=None)), tasks, "u1", targets)
    first, empty, last = (t.future for t in tasks)
    assert first.result().record.name == "a.md" and first.result().chunks
    assert isinstance(empty.exception(), ParseError)
    assert "no answer" in str(last.exception())
