"""``citewell import``: chunks with their vectors into a KB, nothing parsed or embedded.
Real parts: the ONNX embedder makes the vectors, LanceDB and SQLite keep them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from citewell import Citewell, Settings
from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.errors import InvalidInput
from citewell.ingest.chunk_files import ImportedFile
from citewell.services.ingest import IngestService
from citewell.types import ChunkFilter

LEAVE = ["Parental leave lasts sixteen weeks at full pay.", "Sick leave needs a doctor's note."]
EXPENSES = ["Expenses are reimbursed within thirty days.", "Receipts must be attached."]


def _rows(app, files: dict[str, list[str]]) -> list[dict]:
    rows = []
    for name, texts in files.items():
        vectors = app.embedder.embed(texts, "document")
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
            rows.append({"file": name, "text": text, "vector": [float(x) for x in vector],
                         "page": i + 1, "headings": ["Policy"]})  # fmt: skip
    return rows


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _parquet(path: Path, rows: list[dict]) -> Path:
    columns = {key: [r[key] for r in rows] for key in rows[0]}
    matrix = np.asarray(columns.pop("vector"), dtype=np.float32)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    pq.write_table(pa.table({**columns, "vector": vectors}), path)
    return path


def _service(app) -> IngestService:
    return IngestService(Scoped(app, Access.everything()))


@pytest.mark.parametrize("write", [_jsonl, _parquet], ids=["jsonl", "parquet"])
def test_imported_chunks_are_found_viewed_and_cited_like_ingested_ones(app, tmp_path, write):
    rows = _rows(app, {"leave.md": LEAVE, "expenses.md": EXPENSES})
    path = write(tmp_path / f"chunks.{write.__name__[1:]}", rows)
    report = _service(app).import_chunks(path, "hr")
    assert (report.files_imported, report.chunks_stored) == (2, 4)
    (best, *_) = app.search("how long is parental leave", ["hr"])
    assert best.chunk.text == LEAVE[0] and best.bm25_score  # found by meaning and by words
    assert (best.chunk.page, best.chunk.headings) == (1, ("Policy",))
    text = app.storage.text(best.chunk.file_id)
    assert text == "\n\n".join(LEAVE)
    assert text[best.chunk.start : best.chunk.end] == LEAVE[0]  # a citation points into it
    files = app.catalog.files_in_kb(app.kb_id("hr"))
    assert set(files) == {"leave.md", "expenses.md"}
    assert files["leave.md"].source == "import" and files["leave.md"].chunk_count == 2


def test_a_second_import_leaves_unchanged_files_and_replaces_changed_ones(
    app, tmp_path, monkeypatch
):
    service = _service(app)
    service.import_chunks(_jsonl(tmp_path / "a.jsonl", _rows(app, {"leave.md": LEAVE})), "hr")
    same = _jsonl(tmp_path / "b.jsonl", _rows(app, {"leave.md": LEAVE}))
    written: list[int] = []  # progress, reported after each batch written
    optimized: list[bool] = []
    writer = type(app.ingestor.writer)
    optimize = writer.optimize
    monkeypatch.setattr(writer, "optimize", lambda self: optimized.append(optimize(self)))
    again = service.import_chunks(same, "hr", lambda r: written.append(r.chunks_stored))
    assert (again.files_unchanged, again.chunks_stored) == (1, 0)
    # Nothing to write: no batch; the upkeep only looks for rows a stopped import left out.
    assert written == [] and optimized == [None]
    changed = ["Parental leave lasts twenty weeks at full pay."]
    other = _jsonl(tmp_path / "c.jsonl", _rows(app, {"leave.md": changed}))
    report = service.import_chunks(other, "hr", lambda r: written.append(r.chunks_stored))
    assert (report.files_replaced, report.chunks_stored) == (1, 1)
    assert written == [1] and len(optimized) == 2
    texts = [r.chunk.text for r in app.search("parental leave weeks", ["hr"], k=10)]
    assert texts == changed  # the old text's chunks are gone
    assert app.store.count(ChunkFilter()) == 1


@pytest.fixture
def indexed_app(tmp_path, onnx_embedder):
    """An app whose table wants a vector index from its first row (as at 50,000 by default)."""
    settings = Settings.load(data_dir=tmp_path / "indexed", vector_index_min_rows=1)
    app = Citewell.from_settings(settings, embedder=onnx_embedder)
    yield app
    app.close()


def test_an_import_stopped_before_its_indexes_is_finished_by_running_it_again(
    indexed_app, tmp_path, monkeypatch
):
    app = indexed_app
    path = _jsonl(tmp_path / "a.jsonl", _rows(app, {"leave.md": LEAVE, "expenses.md": EXPENSES}))
    writer = type(app.ingestor.writer)

    def interrupted(self):
        raise KeyboardInterrupt  # ^C once every row is written, before the indexes

    with monkeypatch.context() as patched:
        patched.setattr(writer, "optimize", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _service(app).import_chunks(path, "hr")
    stopped = app.check(recall_samples=0)
    assert stopped.index is not None and stopped.index.vector_index == "none"
    assert stopped.index.rows_behind == 4
    assert stopped.indexes_behind and stopped.problems == 1
    again = _service(app).import_chunks(path, "hr")
    assert (again.files_unchanged, again.chunks_stored) == (2, 0)
    finished = app.check(recall_samples=0)
    assert finished.index is not None and finished.index.vector_index == "IvfSq"
    assert finished.index.rows_behind == 0 and finished.problems == 0
    (best, *_) = app.search("how long is parental leave", ["hr"])
    assert best.chunk.text == LEAVE[0] and best.bm25_score


def test_the_same_text_under_two_names_is_stored_once(app, tmp_path):
    rows = _rows(app, {"leave.md": LEAVE, "copy-of-leave.md": LEAVE})
    report = _service(app).import_chunks(_jsonl(tmp_path / "a.jsonl", rows), "hr")
    assert (report.files_imported, report.chunks_stored) == (2, 2)
    assert set(app.catalog.files_in_kb(app.kb_id("hr"))) == {"leave.md", "copy-of-leave.md"}


def test_texts_the_tenant_holds_are_linked_without_making_their_rows(app, tmp_path, monkeypatch):
    """An import of texts held already (in another KB of the tenant's) is found out a group
    of files at a time, before rows or BM25 terms are made: they are linked, not stored."""
    from citewell.ingest import terms_ahead

    service = _service(app)
    path = _jsonl(tmp_path / "a.jsonl", _rows(app, {"leave.md": LEAVE, "expenses.md": EXPENSES}))
    service.import_chunks(path, "hr")
    made: list[str] = []
    rows, terms = app.ingestor.rows.given_columns, terms_ahead.terms_strings
    monkeypatch.setattr(
        app.ingestor.rows, "given_columns", lambda *a: made.append("rows") or rows(*a)
    )
    monkeypatch.setattr(terms_ahead, "terms_strings", lambda t, s: made.extend(t) or terms(t, s))
    report = service.import_chunks(path, "archive")
    assert (report.files_imported, report.chunks_stored, made) == (2, 0, [])
    assert set(app.catalog.files_in_kb(app.kb_id("archive"))) == {"leave.md", "expenses.md"}
    (best, *_) = app.search("how long is parental leave", ["archive"])
    assert best.chunk.text == LEAVE[0]
    assert app.store.count(ChunkFilter()) == 4  # once, in both KBs


def test_a_held_text_deleted_before_its_batch_is_written_is_stored(app, tmp_path, monkeypatch):
    """Between the look-up and the write another request may delete the held file: the
    import then makes its rows and stores it, rather than link a file that is gone."""
    from citewell.ingest.imports import ChunkImport

    service = _service(app)
    path = _jsonl(tmp_path / "a.jsonl", _rows(app, {"leave.md": LEAVE}))
    service.import_chunks(path, "hr")
    (held,) = app.catalog.files_in_kb(app.kb_id("hr")).values()
    write = ChunkImport._write_batch

    def deleted_first(self, batch, *rest):
        app.ingestor.remove_from_kb(app.kb_id("hr"), held.id)  # its last KB: the file goes
        return write(self, batch, *rest)

    monkeypatch.setattr(ChunkImport, "_write_batch", deleted_first)
    report = service.import_chunks(path, "archive")
    assert (report.files_imported, report.chunks_stored) == (1, 2)
    assert app.catalog.get_file(held.id) is not None
    assert app.storage.text(held.id) == "\n\n".join(LEAVE)
    texts = [r.chunk.text for r in app.search("parental leave", ["archive"], k=10)]
    assert LEAVE[0] in texts


def test_a_long_import_gets_the_terms_an_ingest_would_from_another_process(
    app, tmp_path, monkeypatch
):
    """Past the first group of files an import's BM25 terms are made in a process of their
    own (ingest.terms_ahead); they are the terms the chunk rows would make here."""
    from citewell.ingest import imports
    from citewell.retrieval.tokenize import terms_string

    monkeypatch.setattr(imports, "LOOKUP_GROUP", 2)
    files = {f"policy-{n}.md": [f"{t} (clause {n})" for t in LEAVE + EXPENSES] for n in range(5)}
    path = _parquet(tmp_path / "many.parquet", _rows(app, files))
    report = _service(app).import_chunks(path, "hr")
    assert (report.files_imported, report.chunks_stored) == (5, 20)
    stored = app.store.scan(ChunkFilter())
    assert len(stored) == 20
    rows = app.ingestor.rows
    target = app.ingestor.sets.targets(app.kb_id("hr"), app.embedder)[0]
    for chunk in stored:
        one = ImportedFile(
            chunk.file_name, [chunk.text], np.zeros((1, 1)), [None], [chunk.headings]
        )
        (text,) = rows.given_bm25_texts(one, target)
        assert text.endswith(chunk.text)
        assert chunk.terms == terms_string(text, rows.stemmer)


def test_a_parquet_file_of_many_row_groups_reads_through_a_small_buffer(app, tmp_path, monkeypatch):
    """Column chunks are read through a buffer, not each row group whole: files whose rows
    cross row groups and buffer refills come back whole and in order."""
    from citewell.ingest import chunk_files

    monkeypatch.setattr(chunk_files, "READ_BUFFER", 256)
    files = {f"policy-{n}.md": [f"{t} (clause {n})" for t in LEAVE + EXPENSES] for n in range(3)}
    rows = _rows(app, files)
    columns = {key: [r[key] for r in rows] for key in rows[0]}
    matrix = np.asarray(columns.pop("vector"), dtype=np.float32)
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), matrix.shape[1])
    path = tmp_path / "groups.parquet"
    pq.write_table(pa.table({**columns, "vector": vectors}), path, row_group_size=5)
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    read = list(chunk_files.read_chunk_file(path))
    assert [f.name for f in read] == list(files)
    assert [f.texts for f in read] == list(files.values())
    assert np.allclose(np.concatenate([f.vectors for f in read]), matrix)


def test_a_parquet_row_without_text_is_named_by_its_place_in_the_file(tmp_path, monkeypatch):
    from citewell.ingest import chunk_files

    monkeypatch.setattr(chunk_files, "PARQUET_BATCH", 4)
    texts = [f"clause {n}" for n in range(10)]
    texts[6] = None
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(40, dtype=np.float32)), 4)
    table = pa.table({"file": [f"f{n // 2}.md" for n in range(10)], "text": texts,
                      "vector": vectors})  # fmt: skip
    pq.write_table(table, tmp_path / "gap.parquet")
    with pytest.raises(InvalidInput, match="Row 7 has no text"):
        list(chunk_files.read_chunk_file(tmp_path / "gap.parquet"))


def test_bad_files_are_refused_with_what_to_do(app, tmp_path):
    service = _service(app)
    short = [{**r, "vector": r["vector"][:10]} for r in _rows(app, {"leave.md": LEAVE})]
    with pytest.raises(InvalidInput, match="a vector of 10 numbers, where .* gives 384"):
        service.import_chunks(_jsonl(tmp_path / "short.jsonl", short), "hr")
    assert app.store.count(ChunkFilter()) == 0  # nothing half-written
    apart = _rows(app, {"leave.md": LEAVE, "expenses.md": EXPENSES})
    apart = [apart[0], apart[2], apart[1], apart[3]]
    with pytest.raises(InvalidInput, match="not together; sort the rows by file"):
        service.import_chunks(_jsonl(tmp_path / "apart.jsonl", apart), "hr")
    no_text = [{"file": "a.md", "vector": [0.0] * 384}]
    with pytest.raises(InvalidInput, match="no text"):
        service.import_chunks(_jsonl(tmp_path / "no-text.jsonl", no_text), "hr")
    with pytest.raises(InvalidInput, match=r"give a \.parquet or \.jsonl file"):
        service.import_chunks(_jsonl(tmp_path / "chunks.csv", no_text), "hr")
    pq.write_table(pa.table({"file": ["a.md"], "text": ["x"]}), tmp_path / "novec.parquet")
    with pytest.raises(InvalidInput, match="no column vector"):
        service.import_chunks(tmp_path / "novec.parquet", "hr")


def _many_files(count: int) -> dict[str, list[str]]:
    return {f"policy-{n}.md": [f"{t} (clause {n})" for t in LEAVE] for n in range(count)}


def _spy_on_the_process(monkeypatch) -> list[bool]:
    """Whether each import's text writer had started its process, seen as it closes."""
    from citewell.ingest import text_writer

    used: list[bool] = []
    close = text_writer.TextWriter.close

    def spied(self) -> None:
        used.append(self._process is not None)
        close(self)

    monkeypatch.setattr(text_writer.TextWriter, "close", spied)
    return used


def _assert_texts_stored(app, files: dict[str, list[str]]) -> None:
    held = app.catalog.files_in_kb(app.kb_id("hr"))
    assert set(held) == set(files)
    for name, record in held.items():
        text = "\n\n".join(files[name])
        assert app.storage.text(record.id) == text
        assert record.text_is_original  # stored once, as the text
        assert app.storage.original(record.id, record.text_is_original) == text.encode()


def test_a_long_import_writes_its_texts_from_another_process(app, tmp_path, monkeypatch):
    """Batches of many files have their texts written by a process of their own
    (ingest.text_writer): each file's text and original are there once the import ends."""
    from citewell.ingest import imports, text_writer

    monkeypatch.setattr(text_writer, "PROCESS_FROM", 2)
    monkeypatch.setattr(imports, "IMPORT_BATCH", 4)
    used = _spy_on_the_process(monkeypatch)
    files = _many_files(7)
    path = _parquet(tmp_path / "many.parquet", _rows(app, files))
    report = _service(app).import_chunks(path, "hr")
    assert (report.files_imported, report.chunks_stored) == (7, 14)
    assert used == [True]
    _assert_texts_stored(app, files)


def test_texts_the_other_process_fails_to_write_are_written_here(app, tmp_path, monkeypatch):
    from concurrent.futures import Future

    from citewell.ingest import imports, text_writer

    class BrokenPool:
        def submit(self, *args):
            failed: Future[None] = Future()
            failed.set_exception(RuntimeError("the process died"))
            return failed

        def shutdown(self, **kwargs):
            pass

    monkeypatch.setattr(text_writer, "PROCESS_FROM", 2)
    monkeypatch.setattr(text_writer, "ProcessPoolExecutor", lambda *a, **k: BrokenPool())
    monkeypatch.setattr(imports, "IMPORT_BATCH", 4)
    files = _many_files(5)
    path = _parquet(tmp_path / "many.parquet", _rows(app, files))
    assert _service(app).import_chunks(path, "hr").files_imported == 5
    _assert_texts_stored(app, files)


def test_an_imports_batches_are_fragments_the_upkeep_leaves_whole() -> None:
    """Each batch is one LanceDB fragment; one under SMALL_FRAGMENT_ROWS would be rewritten
    by the closing optimize (10 s of a million-chunk import)."""
    from citewell.ingest import imports
    from citewell.stores.lance.upkeep import SMALL_FRAGMENT_ROWS

    assert imports.IMPORT_BATCH >= SMALL_FRAGMENT_ROWS


def test_a_bad_row_after_written_batches_leaves_those_batches_whole(app, tmp_path, monkeypatch):
    """Batches are written while the next is made (ingest.write_behind): a bad row stops the
    import with the batches before it written whole, and nothing after them. Files are
    read a group at a time, a group ahead (their terms are made meanwhile): a bad row in
    the third group leaves the first written, the second not begun."""
    from citewell.ingest import imports

    monkeypatch.setattr(imports, "IMPORT_BATCH", 4)
    monkeypatch.setattr(imports, "LOOKUP_GROUP", 2)
    rows = _rows(app, _many_files(6))  # two chunks a file: files 0-1 fill the first batch
    rows[-1] = {**rows[-1], "vector": rows[-1]["vector"][:10]}
    with pytest.raises(InvalidInput, match="policy-5.md, chunk 2: a vector of 10 numbers"):
        _service(app).import_chunks(_jsonl(tmp_path / "bad.jsonl", rows), "hr")
    held = app.catalog.files_in_kb(app.kb_id("hr"))
    assert set(held) == {"policy-0.md", "policy-1.md"}
    assert app.store.count(ChunkFilter()) == 4
    assert {c.file_id for c in app.store.scan(ChunkFilter())} == {r.id for r in held.values()}
