"""Table questions on PDFs, side by side: Citewell's PDF reader against the pypdf text it used
before and Open WebUI 0.12.4's default path (pypdf's page text, LangChain's recursive
character splitter at 1,000/100, vector search), all with the same embedding model.

The set (citewell.testing.table_questions): PDFs made for it (ruled and borderless tables,
one and two columns, a table over a page break) and one question per cell, naming its row
and its column in words. A **hit** is a retrieved chunk (top 5) in which the answer cell
stands in one Markdown row with its row label and the column header is in the same chunk
(the header a chunk of later rows carries counts: the LLM reads it with the chunk); the
weaker **cells@5** only asks for the row label and the answer anywhere in one chunk.
**Extractive accuracy**: Citewell's no-LLM answer quotes a row or sentence holding the row
label and the answer and no other row's label. Also parse time per page, new against old,
on the shared PDFs.

    .venv/bin/pip install langchain-text-splitters   # the Open WebUI side only
    .venv/bin/python -m benchmarks.table_questions --work /tmp/tables
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import SCIFACT
from citewell import Citewell, Settings
from citewell.answer.extractive import extractive_answer
from citewell.loaders.pdf import PdfLoader
from citewell.testing.table_questions import (
    TableQuestion,
    answered,
    as_read,
    has_cells,
    is_hit,
    table_question_set,
)


def pypdf_pages(data: bytes) -> list[str]:
    """What Citewell read before (and Open WebUI's PyPDFLoader reads): pypdf's page text."""
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]


def citewell_side(work: Path, files: list[Any], questions: list[TableQuestion], old: bool):
    """Citewell with its defaults, the PDFs read by the new reader, or (``old``) their pypdf
    text ingested as it was read before."""
    shutil.rmtree(work, ignore_errors=True)
    app = Citewell.from_settings(Settings.load(data_dir=work))
    try:
        if old:
            texts = [(f"{f.name}.txt", "\n\n".join(pypdf_pages(f.data))) for f in files]
            report = app.ingest_texts(texts, "tables")
            assert report.files_failed == 0, report.errors
        else:
            folder = work.with_name(f"{work.name}-pdfs")
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            for f in files:
                (folder / f.name).write_bytes(f.data)
            app.ingest([folder], "tables")
        hits = cells = correct = 0
        stemmer = app.settings.retrieval.bm25_stemmer
        labels = {q.row for q in questions}
        for question in questions:
            results = app.search(question.question, ["tables"], k=5)
            texts = [as_read(r.chunk.text, r.chunk.headings) for r in results]
            hits += any(is_hit(question, text) for text in texts)
            cells += any(has_cells(question, text) for text in texts)
            answer = extractive_answer(question.question, results, stemmer)
            correct += answered(question, answer.text, labels)
        n = len(questions)
        return {"hit@5": hits / n, "cells@5": round(cells / n, 3), "extractive": correct / n}
    finally:
        app.close()


def open_webui_side(embedder: Any, files: list[Any], questions: list[TableQuestion]):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=100)
    chunks = [c for f in files for page in pypdf_pages(f.data) for c in splitter.split_text(page)]
    vectors = np.asarray(embedder.embed(chunks, "document"))
    hits = cells = 0
    for question in questions:
        query = np.asarray(embedder.embed([question.question], "query"))[0]
        top = np.argsort(-(vectors @ query))[:5]
        hits += any(is_hit(question, chunks[i]) for i in top)
        cells += any(has_cells(question, chunks[i]) for i in top)
    n = len(questions)
    return {"hit@5": hits / n, "cells@5": round(cells / n, 3), "extractive": None}


def parse_times(paths: list[Path], rounds: int = 5) -> dict[str, Any]:
    """Median seconds per page, new reader against pypdf, on each file."""
    loader, out = PdfLoader(), {}
    for path in paths:
        data = path.read_bytes()
        pages = len(pypdf_pages(data))
        new = statistics.median(
            _timed(lambda d=data, n=path.name: loader.load(d, n)) for _ in range(rounds)
        )
        old = statistics.median(_timed(lambda d=data: pypdf_pages(d)) for _ in range(rounds))
        out[path.name] = {
            "pages": pages,
            "new_ms_per_page": round(new * 1000 / pages, 2),
            "pypdf_ms_per_page": round(old * 1000 / pages, 2),
            "ratio": round(new / old, 2),
        }
    ratios = [v["ratio"] for v in out.values()]
    return {"files": out, "median_ratio": round(statistics.median(ratios), 2)}


def _timed(fn: Any) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    files, questions = table_question_set()
    report: dict[str, Any] = {"questions": len(questions), "files": [f.name for f in files]}
    report["citewell"] = citewell_side(args.work / "new", files, questions, old=False)
    report["citewell_before"] = citewell_side(args.work / "old", files, questions, old=True)
    app = Citewell.from_settings(Settings.load(data_dir=args.work / "new"))
    try:
        report["open_webui"] = open_webui_side(app.embedder, files, questions)
    finally:
        app.close()
    shared = sorted((SCIFACT.parent / "docs").glob("*.pdf"))
    with_text = [p for p in shared if len("".join(pypdf_pages(p.read_bytes()))) > 200]  # no scans
    report["parse"] = parse_times(with_text)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
