"""A batch's files are split where they are read (ingest.split_where_read): in the reader's
worker process, with exactly the rows a split here makes; sets that need this process (an
LLM's contexts, a tokenizer, an embedder, a plug-in) split here."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from citewell.errors import ParseError
from citewell.ingest.chunk_rows import ChunkRows, sha256
from citewell.ingest.run import ParseTask, Parsing, prepare_files, split_file
from citewell.ingest.split_where_read import SplitDocument, split_where_read
from citewell.loaders import DocumentReader
from citewell.loaders.isolated import IsolatedReader, ReaderConfig
from citewell.sources import text_item
from citewell.splitters import (
    CharacterMeasure,
    MaxMinSemanticSplitter,
    RecursiveSplitter,
    TokenMeasure,
)
from citewell.testing.fakes import FakeHashEmbedder
from tests.hostile import huge_text

FILES = [
    ("herons.md", b"# Herons\n\nHerons wade in shallow water.\n\n## Nests\n\nThey nest in trees."),
    ("coots.txt", b"Coots dive for weeds. " * 200),
    ("table.md", b"# Birds\n\n| bird | food |\n|---|---|\n| heron | fish |\n| coot | weeds |\n"),
]


@pytest.fixture
def app(settings):
    from citewell.app import Citewell

    return Citewell.from_settings(settings, embedder=FakeHashEmbedder(16))


@pytest.fixture
def targets(app):
    kb = app.create_kb("birds")
    return app.ingestor.sets.targets(kb.id, app.ingestor.embedder)


def file_ids(tenant: str, digest: str) -> str:
    return f"{tenant}{digest[:8]}"


def tasks() -> list[ParseTask]:
    return [ParseTask(text_item(name, ""), data, sha256(data)) for name, data in FILES]


def test_a_file_split_in_the_reader_worker_gets_the_rows_a_split_here_makes(targets):
    assert split_where_read(ChunkRows("english"), targets, [("f", "a.md")]) is not None
    worker = IsolatedReader(ReaderConfig(ocr_engine="off", timeout=60))
    here = DocumentReader(ocr=None)
    try:
        batch = tasks()
        parsing = Parsing(worker, ChunkRows("english"), file_ids, split_where_read=True)
        prepare_files(parsing, batch, "u1", targets)
        for task in batch:
            made = task.future.result()
            document = here.read(task.data, task.item.name)
            parsing = Parsing(here, ChunkRows("english"), file_ids)
            alone = split_file(parsing, task.item, task.data, task.digest, document, "u1", targets)
            assert made.chunks and made.chunks == alone.chunks
            assert made.embed_texts == alone.embed_texts
            assert replace(made.record, created_at=0) == replace(alone.record, created_at=0)
            assert (made.text, made.sections) == (alone.text, alone.sections)
    finally:
        worker.close()


def test_sets_that_need_this_process_split_here(targets, app):
    rows, files = ChunkRows("english"), [("f", "a.md")]
    embedder = app.ingestor.embedder
    target = targets[0]

    class Active:
        active = True

    class PlugIn:
        def split(self, document):
            return []

    must_stay = [
        replace(target, enricher=Active()),  # an LLM writes the chunks' contexts
        replace(target, splitter=MaxMinSemanticSplitter(embedder, 500, 100, CharacterMeasure())),
        replace(target, splitter=RecursiveSplitter(500, measure=TokenMeasure(_tokenizer()))),
        replace(target, splitter=PlugIn()),
    ]
    for stays in must_stay:
        assert split_where_read(rows, [target, stays], files) is None
    assert split_where_read(ChunkRows("english", bypass=True), [target], files) is None
    plan = split_where_read(rows, [target], files)
    assert plan is not None and plan.plans[0].label == target.label


def _tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    return tokenizer


def test_files_read_again_alone_keep_their_place(targets):
    """A file that kills the worker fails alone; the others, read again one at a time, are
    split under their own ids."""
    config = ReaderConfig(ocr_engine="off", memory_mb=600, max_chars=10**10, timeout=120)
    worker = IsolatedReader(config)
    try:
        files = [(b"before it", "a.txt"), (huge_text(200), "huge.txt"), (b"after it", "b.txt")]
        ids = [("id-a", "a.txt"), ("id-huge", "huge.txt"), ("id-b", "b.txt")]
        after = split_where_read(ChunkRows("english"), targets, ids)
        assert after is not None
        before, huge, later = worker.read_each(files, after)
        assert isinstance(before, SplitDocument) and isinstance(later, SplitDocument)
        assert {c.file_id for c in before.sets[0][0]} == {"id-a"}
        assert {c.file_id for c in later.sets[0][0]} == {"id-b"}
        assert isinstance(huge, ParseError) and "memory" in huge.message
    finally:
        worker.close()


def test_a_failure_after_reading_is_that_files_error_alone():
    def after(document, index):
        if index == 1:
            raise ValueError("odd text")
        return document.text

    files = [(b"one", "one.txt"), (b"two", "two.txt"), (b"three", "three.txt")]
    one, two, three = DocumentReader(ocr=None).read_each(files, after)
    assert (one, three) == ("one", "three")
    assert isinstance(two, ParseError) and "two.txt" in two.message and "odd text" in two.message


def test_a_reader_worker_splits_without_the_servers_heavy_modules():
    # A new worker imports what a split needs on its first batch, after a restart too: the
    # database, LLM clients and model runtimes would add a second to that batch (which, in
    # CI's crash test, kept the same jobs in flight at each kill). Mechanism, not timing.
    code = (
        "import sys, json\n"
        "import citewell.loaders.isolated, citewell.ingest.split_where_read\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(done.stdout)
    heavy = ("sqlalchemy", "httpx", "onnxruntime", "lancedb", "pyarrow", "citewell.db")
    heavy += ("citewell.llm", "citewell.stores", "citewell.retrieval.retriever")
    assert [m for m in loaded if m.startswith(heavy)] == []
    assert "citewell.retrieval.tokenize" in loaded  # what the BM25 terms need is there


def test_lazy_package_exports_resolve():
    import citewell.embedders
    import citewell.enrich
    import citewell.retrieval

    for package in (citewell.embedders, citewell.enrich, citewell.retrieval):
        for name in package.__all__:
            assert getattr(package, name) is not None, f"{package.__name__}.{name}"
        with pytest.raises(AttributeError, match="no attribute 'nothing'"):
            package.nothing  # noqa: B018
