"""Model switch under load: a KB built with one embedding model, then the server restarted with
another of a different dimension while a client queries it without pause.

    python -m benchmarks.model_switch --docs 2500

Phase 1: `citewell serve` with a remote OpenAI-compatible model (a local wire-format fake,
tests/fake_servers.FakeService, 256 dimensions) ingests SciFact abstracts as files through the
batch API. Phase 2: `citewell serve` restarted on the default model (all-MiniLM-L6-v2 in
process, 384 dimensions); it re-embeds every chunk in the background while one client sends
SciFact queries back to back. Ends 10 s after the switch. Prints a JSON summary: chunks,
switch time, queries during and after it, errors, empty answers, latency medians.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from tests.fake_servers import FakeService, serve

from benchmarks.common import SCIFACT, scifact_docs
from citewell.testing.processes import free_port
from citewell.testing.served import start_server

KB = "scifact"
UPLOAD_BATCH = 250


def ingest(base: str, docs: list[tuple[str, str]]) -> None:
    with httpx.Client(base_url=base, timeout=600) as client:
        client.post("/api/v1/knowledge", json={"name": KB}).raise_for_status()
        batches = []
        for start in range(0, len(docs), UPLOAD_BATCH):
            part = docs[start : start + UPLOAD_BATCH]
            files = [("files", (f"{name}.md", text.encode())) for name, text in part]
            response = client.post(f"/api/v1/knowledge/{KB}/batch", files=files)
            response.raise_for_status()
            batches.append(response.json()["batch_id"])
        for batch in batches:
            while not client.get(f"/api/v1/jobs/batches/{batch}").json()["done"]:
                time.sleep(0.5)


class Load(threading.Thread):
    """Queries back to back; each answer is (seconds since start, status, results, ms)."""

    def __init__(self, base: str, queries: list[str]) -> None:
        super().__init__(daemon=True)
        self.base, self.queries = base, queries
        self.answers: list[tuple[float, int, int, float]] = []
        self.stop = threading.Event()
        self.began = time.monotonic()

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=60) as client:
            i = 0
            while not self.stop.is_set():
                query = self.queries[i % len(self.queries)]
                i += 1
                sent = time.monotonic()
                try:
                    response = client.post(
                        "/api/v1/retrieval/query/collection",
                        json={"collection_names": [KB], "query": query, "k": 5},
                    )
                    status = response.status_code
                    found = len(response.json()["documents"][0]) if status == 200 else 0
                except httpx.HTTPError:
                    status, found = 0, 0
                ms = (time.monotonic() - sent) * 1000
                self.answers.append((sent - self.began, status, found, ms))


def switch(base: str, queries: list[str], settle: float) -> dict[str, object]:
    with httpx.Client(base_url=base, timeout=60) as client:
        load = Load(base, queries)
        load.start()
        before = client.get("/api/v1/embedding").json()
        while client.get("/api/v1/embedding").json()["switch"] is not None:
            time.sleep(1.0)
        switched = time.monotonic() - load.began
        after = client.get("/api/v1/embedding").json()
        time.sleep(settle)
        load.stop.set()
        load.join()
    during = [a for a in load.answers if a[0] < switched]
    later = [a for a in load.answers if a[0] >= switched]
    return {
        "chunks_before": before["chunks"],
        "chunks_after": after["chunks"],
        "from": before["active"],
        "to": after["active"],
        "switch_seconds": round(switched, 1),
        "queries_during_switch": len(during),
        "queries_after_switch": len(later),
        "errors": sum(1 for a in load.answers if a[1] != 200),
        "empty_answers": sum(1 for a in load.answers if a[2] == 0),
        "median_ms_during": round(statistics.median(a[3] for a in during), 1) if during else None,
        "median_ms_after": round(statistics.median(a[3] for a in later), 1) if later else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2500)
    parser.add_argument("--settle", type=float, default=10.0)
    args = parser.parse_args()
    queries = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").open()]
    data, port = Path(tempfile.mkdtemp(prefix="citewell-switch-")), free_port()
    base = f"http://127.0.0.1:{port}"
    fake = FakeService(dimension=256)
    with serve(fake) as fake_url:
        remote = {
            "CITEWELL_EMBEDDING_ENGINE": "openai",
            "CITEWELL_EMBEDDING_BASE_URL": fake_url + "/v1",
            "CITEWELL_EMBEDDING_MODEL": "fake-256",
        }
        server = start_server(data, port, remote)
        began = time.monotonic()
        ingest(base, scifact_docs(args.docs))
        ingest_seconds = time.monotonic() - began
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        server = start_server(data, port)  # the default model: onnx MiniLM, 384 dimensions
        try:
            result = switch(base, queries, args.settle)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
    result = {"docs": args.docs, "ingest_seconds": round(ingest_seconds, 1), **result}
    print(json.dumps(result, indent=2))
    ok = result["errors"] == 0 and result["empty_answers"] == 0
    sys.exit(0 if ok and result["chunks_after"] == result["chunks_before"] else 1)


if __name__ == "__main__":
    main()
