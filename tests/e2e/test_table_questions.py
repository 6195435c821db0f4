"""The table question set end to end, as a user would try it: the PDFs uploaded into a KB
with Citewell's defaults (the packaged embedder, hybrid search), each question asked; the
answer cell comes back in a row with its label and column header, and the no-LLM answer
quotes that row (benchmarks/table_questions.py has the side-by-side figures)."""

from __future__ import annotations

import pytest

from citewell.answer.extractive import extractive_answer
from citewell.app import Citewell
from citewell.config import Settings
from citewell.testing.table_questions import answered, as_read, is_hit, table_question_set

pytestmark = pytest.mark.e2e


def test_table_questions_find_their_row(tmp_path, onnx_embedder):
    files, questions = table_question_set()
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for file in files:
        (folder / file.name).write_bytes(file.data)
    app = Citewell.from_settings(Settings.load(data_dir=tmp_path / "data"), embedder=onnx_embedder)
    try:
        report = app.ingest([folder], "tables")
        assert report.files_failed == 0, report.errors
        labels = {q.row for q in questions}
        hits = correct = 0
        for question in questions:
            results = app.search(question.question, ["tables"], k=5)
            read = [as_read(r.chunk.text, r.chunk.headings) for r in results]
            hits += any(is_hit(question, text) for text in read)
            answer = extractive_answer(question.question, results, "english")
            correct += answered(question, answer.text, labels)
    finally:
        app.close()
    assert len(questions) >= 100
    assert hits / len(questions) >= 0.9
    assert correct / len(questions) >= 0.9
