"""How much one tenant's heavy work slows another's: alice's page image and PDF upload
latency alone, then while bob asks four times at once, again and again, for a page built to
draw slowly (citewell.testing.pdf_pages.slow_page_pdf) and has 500 files queued for
ingestion. The figure that matters is contended p95 / alone p95 (the target: at most 2).
Each round's "alone" phase starts once bob's files of the round before are all ingested.

A real server (uvicorn on 127.0.0.1, in this process, authentication on, default settings);
rounds alternate alone and contended on the same server.

    python -m benchmarks.tenant_fairness --rounds 2 --samples 12 [--settings job_slice_files=64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import httpx  # noqa: E402

from benchmarks.common import scifact_docs, summary  # noqa: E402
from citewell import Citewell, Settings  # noqa: E402
from citewell.api.app import create_app  # noqa: E402
from citewell.auth import AuthStore  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402
from citewell.testing.asgi import served  # noqa: E402
from citewell.testing.pdf_pages import Page, pdf_bytes, slow_page_pdf  # noqa: E402

BOB_FILES = 500


@contextmanager
def server(variant: str = "") -> Iterator[tuple[str, dict[str, str]]]:
    """A server with the default settings, changed by ``variant`` ("name=value,...")."""
    changes = dict(pair.split("=", 1) for pair in variant.split(",") if pair)
    settings = Settings.load(data_dir=Path(tempfile.mkdtemp()), auth="required", **changes)
    app = Citewell.from_settings(settings, embedder=OnnxEmbedder())
    users = AuthStore(app.catalog.engine)
    keys = {}
    for name in ("alice", "bob"):
        keys[name] = users.create_key(users.create_user(name).id, "bench")[1]
    with served(create_app(settings, app), "error") as base:
        yield base, keys


def client(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=600)


def a_pdf(words: str) -> bytes:
    page = Page()
    page.paragraph(72, 72, f"Report {words}. " + "The quarterly figures rose. " * 40, 460)
    return pdf_bytes([page])


class Bob:
    """Bob's load: four page renders in flight without pause, and a queue of files."""

    def __init__(self, base: str, key: str, slow_file: str) -> None:
        self.base, self.key, self.slow_file = base, key, slow_file
        self.stop = threading.Event()
        self.statuses: dict[int, int] = {}
        self.threads = [threading.Thread(target=self._render, daemon=True) for _ in range(4)]

    def _render(self) -> None:
        path = f"/api/v1/files/{self.slow_file}/pages/1/image"
        with client(self.base, self.key) as bob:
            while not self.stop.is_set():
                status = bob.get(path, params={"width": 1200}).status_code
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status == 429:
                    time.sleep(0.2)  # as a client told to retry would

    def queue_files(self, kb: str, round_no: int) -> None:
        docs = scifact_docs(BOB_FILES * (round_no + 1))[BOB_FILES * round_no :]
        files = [("files", (f"{n}.md", t.encode())) for n, t in docs]
        with client(self.base, self.key) as bob:
            sent = bob.post(f"/api/v1/knowledge/{kb}/batch", files=files)
            sent.raise_for_status()
            self.batch = sent.json()["batch_id"]

    def wait_for_queue(self) -> None:
        """Until bob's files are all ingested: the next 'alone' round is alone."""
        with client(self.base, self.key) as bob:
            while not bob.get(f"/api/v1/jobs/batches/{self.batch}").json()["done"]:
                time.sleep(0.5)

    def __enter__(self) -> Bob:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(120)


def measure_alice(alice: httpx.Client, mine: str, samples: int, tag: str) -> dict[str, list]:
    images, uploads = [], []
    for n in range(samples):
        began = time.perf_counter()
        alice.get(f"/api/v1/files/{mine}/pages/1/image", params={"width": 1200}).raise_for_status()
        images.append(time.perf_counter() - began)
        began = time.perf_counter()
        sent = alice.post(
            "/api/v1/knowledge/alice-docs/files",
            files={"file": (f"{tag}-{n}.pdf", a_pdf(f"{tag} number {n}"))},
        )
        sent.raise_for_status()
        uploads.append(time.perf_counter() - began)
    return {"page_image_s": images, "pdf_upload_s": uploads}


def queued(bob: httpx.Client) -> int:
    return len(bob.get("/api/v1/jobs", params={"state": "queued"}).json())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=12)
    parser.add_argument("--settings", default="", help='e.g. "job_slice_files=64"')
    args = parser.parse_args()
    results: dict[str, dict[str, list[float]]] = {"alone": {}, "contended": {}}
    with server(args.settings) as (base, keys), client(base, keys["alice"]) as alice:
        with client(base, keys["bob"]) as bob:
            for who, kb in ((alice, "alice-docs"), (bob, "bob-docs")):
                who.post("/api/v1/knowledge", json={"name": kb}).raise_for_status()
            mine = alice.post(
                "/api/v1/knowledge/alice-docs/files", files={"file": ("mine.pdf", a_pdf("x"))}
            ).json()["file"]["id"]
            slow = bob.post(
                "/api/v1/knowledge/bob-docs/files", files={"file": ("slow.pdf", slow_page_pdf())}
            ).json()["file"]["id"]
        measure_alice(alice, mine, 2, "warm")
        left = []
        for round_no in range(args.rounds):
            alone = measure_alice(alice, mine, args.samples, f"alone{round_no}")
            with Bob(base, keys["bob"], slow) as load:
                load.queue_files("bob-docs", round_no)
                time.sleep(1.0)
                contended = measure_alice(alice, mine, args.samples, f"busy{round_no}")
                with client(base, keys["bob"]) as bob:
                    left.append(queued(bob))
            load.wait_for_queue()
            for phase, figures in (("alone", alone), ("contended", contended)):
                for name, values in figures.items():
                    results[phase].setdefault(name, []).extend(values)
    report: dict[str, object] = {
        "settings": args.settings or "defaults",
        "rounds": args.rounds,
        "samples_per_round": args.samples,
    }
    for name in ("page_image_s", "pdf_upload_s"):
        alone_s, busy_s = summary(results["alone"][name]), summary(results["contended"][name])
        report[name] = {
            "alone": alone_s,
            "contended": busy_s,
            "p95_ratio": round(busy_s["p95"] / max(alone_s["p95"], 1e-9), 2),
            "p50_ratio": round(
                statistics.median(results["contended"][name])
                / max(statistics.median(results["alone"][name]), 1e-9),
                2,
            ),
        }
    report["bob_renders_by_status"] = load.statuses
    report["bob_files_still_queued_after_each_round"] = left
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
