"""``citewell import`` writes a batch's catalog rows beside the next batch's chunks
(ingest.catalog_behind), holding the ingestor's lock meanwhile. Here on the server's own
database: SQLite, and PostgreSQL when the API tier runs with ``--database postgresql``
(CI's stage 2), where the catalog thread and the chunk writes use connections of their
own at once."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from citewell.auth.access import Access
from citewell.engine.scoped import Scoped
from citewell.services.ingest import IngestService
from citewell.types import ChunkFilter

pytestmark = pytest.mark.api

CLAUSES = ["Parental leave lasts sixteen weeks at full pay.", "Sick leave needs a note."]


def _chunk_file(app, path: Path, files: int) -> Path:
    """``files`` files of two chunks each, as JSON Lines with the server's own vectors."""
    lines = []
    for n in range(files):
        texts = [f"{text} (clause {n})" for text in CLAUSES]
        for text, vector in zip(texts, app.embedder.embed(texts, "document"), strict=True):
            row = {"file": f"policy-{n}.md", "text": text, "vector": [float(x) for x in vector]}
            lines.append(json.dumps(row) + "\n")
    path.write_text("".join(lines))
    return path


def test_a_writer_let_in_mid_import_finds_the_catalog_naming_every_stored_file(
    app, tmp_path, monkeypatch
):
    from citewell.ingest import imports

    monkeypatch.setattr(imports, "IMPORT_BATCH", 4)  # two files a batch, four batches
    path = _chunk_file(app, tmp_path / "policies.jsonl", 8)
    catalog_rows, seen, waiters = imports.ChunkImport._catalog_rows, [], []

    def other_writer() -> None:
        with app.ingestor.lock:
            stored = {c.file_id for c in app.store.scan(ChunkFilter())}
            named = {r.id for r in app.catalog.files_in_kb(app.kb_id("hr")).values()}
            seen.append((len(stored), stored <= named))

    def first_waits(self, new):  # another writer asks for the lock during the first part
        if not waiters:
            waiters.append(threading.Thread(target=other_writer))
            waiters[0].start()
            while not app.ingestor.lock.waiting():
                threading.Event().wait(0.01)
        catalog_rows(self, new)

    monkeypatch.setattr(imports.ChunkImport, "_catalog_rows", first_waits)
    report = IngestService(Scoped(app, Access.everything())).import_chunks(path, "hr")
    waiters[0].join(10)
    assert (report.files_imported, report.chunks_stored) == (8, 16)
    ((stored, all_named),) = seen
    assert all_named and 2 <= stored < 16  # let in mid-import, every stored file named
    assert len(app.catalog.files_in_kb(app.kb_id("hr"))) == 8
    assert app.store.count(ChunkFilter()) == 16
    (best, *_) = app.search("how long is parental leave (clause 5)", ["hr"])
    assert best.chunk.file_name == "policy-5.md"
