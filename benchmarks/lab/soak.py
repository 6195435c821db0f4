"""Soak: a bounded run of mixed work against `citewell serve`, with a model switch halfway.

A copy of a SciFact data dir (``--scifact``, made by ``citewell eval``) is served by
``citewell serve`` on 127.0.0.1 (``--workers`` API processes). For ``--minutes``:

- 8 clients search (POST /api/v1/retrieval/query/collection), 2 ask (POST
  /v1/chat/completions, extractive), each pausing ``--pause`` s between requests;
- 1 client uploads a new generated document every second into a KB ``soak`` (batch upload,
  queued), 1 deletes the oldest upload once more than 20 are there;
- halfway the server is stopped (SIGTERM) and started again with another embedding model
  (``embedding_engine=openai`` against FakeService, a wire-faithful fake of OpenAI's
  embeddings API from tests/fake_servers.py, 64 dimensions), so it re-embeds all 10k chunks
  in the background while the clients go on. The clients pause while it restarts (one
  process cannot serve while it restarts; behind a load balancer with two, the other would).

Every 10 s it samples the server's memory (PSS, all its processes, from smaps_rollup) and
its open files (counted by kind: Lance data and index files, SQLite, sockets...); the
server's log goes to ``--work``/server-1.log and server-2.log. It reports per kind of
request: count, errors, p50/p99; and memory and open files at the start and end of each
half (after a warm-up minute), so growth shows.

    python -m benchmarks.lab.soak --scifact /tmp/scifact --work /tmp/soak --minutes 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.fake_servers import FakeService, serve

WORDS = ["heron", "lake", "alder", "colony", "fish", "dawn", "wader", "nest", "reed", "marsh"]


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, dict[str, int]] = field(default_factory=dict)

    def done(self, kind: str, began: float, problem: str = "") -> None:
        self.latencies.setdefault(kind, []).append((time.perf_counter() - began) * 1000)
        if problem:
            errors = self.errors.setdefault(kind, {})
            errors[problem] = errors.get(problem, 0) + 1


def tree(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = children.read_text().split() if children.exists() else []
    return [pid, *(p for kid in kids for p in tree(int(kid)))]


def kind_of(target: str) -> str:
    """What an open file is, from its /proc/<pid>/fd link."""
    for marker, kind in (
        ("socket:", "socket"),
        ("pipe:", "pipe"),
        ("anon_inode:", "anon_inode"),
        (".sqlite", "sqlite"),
        ("/_indices/", "lance_index"),
        (".lance", "lance_data"),
        ("/lancedb/", "lance_other"),
        ("/files/", "stored_file"),
    ):
        if marker in target:
            return kind
    return "other"


def sample(pid: int) -> dict[str, Any]:
    pss, kinds = 0, dict[str, int]()
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
            for fd in os.listdir(f"/proc/{p}/fd"):
                kind = kind_of(os.readlink(f"/proc/{p}/fd/{fd}"))
                kinds[kind] = kinds.get(kind, 0) + 1
        except OSError:
            continue
    return {
        "t": time.monotonic(),
        "pss_mb": round(pss / 1024, 1),
        "open_files": sum(kinds.values()),
        "open_files_by_kind": kinds,
    }


def start(data: Path, port: int, env: dict[str, str], workers: int, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "citewell", "--data-dir", str(data), "serve"]
    server = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
        stdout=subprocess.DEVNULL,
        stderr=log.open("ab"),  # tracebacks of failed requests, if any
        env={**os.environ, "CITEWELL_AUTH": "none", **env},
    )
    for _ in range(1200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise SystemExit("the server did not start")


@dataclass
class Load:
    client: httpx.AsyncClient
    tally: Tally
    kb: str
    queries: list[str]
    end: float
    pause: float
    uploaded: list[str] = field(default_factory=list)

    async def call(self, kind: str, method: str, path: str, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            response = await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            self.tally.done(kind, began, type(exc).__name__)
            return None
        code = response.status_code
        self.tally.done(kind, began, "" if code < 300 else str(code))
        return response

    def running(self) -> bool:
        return time.monotonic() < self.end


async def searcher(load: Load) -> None:
    while load.running():
        body = {"collection_names": [load.kb], "query": random.choice(load.queries), "k": 8}
        await load.call("search", "POST", "/api/v1/retrieval/query/collection", json=body)
        await asyncio.sleep(load.pause)


async def asker(load: Load) -> None:
    while load.running():
        body = {
            "model": "citewell-extractive",
            "messages": [{"role": "user", "content": random.choice(load.queries)}],
            "knowledge_collections": [load.kb],
        }
        await load.call("chat", "POST", "/v1/chat/completions", json=body)
        await asyncio.sleep(load.pause)


async def uploader(load: Load) -> None:
    n = 0
    while load.running():
        n += 1
        text = " ".join(random.choice(WORDS) for _ in range(300))
        files = [("files", (f"soak-{n}.md", f"# Note {n}\n\n{text}".encode()))]
        response = await load.call("upload", "POST", "/api/v1/knowledge/soak/batch", files=files)
        if response is not None and response.status_code == 202:
            load.uploaded.append(f"soak-{n}.md")
        await asyncio.sleep(1.0)


async def deleter(load: Load) -> None:
    while load.running():
        await asyncio.sleep(2.0)
        if len(load.uploaded) <= 20:
            continue
        listing = await load.call("list", "GET", "/api/v1/knowledge/soak")
        if listing is None or listing.status_code != 200:
            continue
        files = sorted(listing.json()["files"], key=lambda f: f["created_at"])
        if len(files) > 20:
            await load.call("delete", "DELETE", f"/api/v1/knowledge/soak/files/{files[0]['id']}")


async def half(base: str, load: Load, seconds: float) -> None:
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        load.client, load.end = client, time.monotonic() + seconds
        if load.kb == "":
            kbs = (await client.get("/api/v1/knowledge")).json()
            load.kb = next(k["name"] for k in kbs if k["name"].startswith("beir-scifact"))
            await load.call("kb", "POST", "/api/v1/knowledge", json={"name": "soak"})
        jobs = [searcher(load) for _ in range(8)] + [asker(load) for _ in range(2)]
        await asyncio.gather(*jobs, uploader(load), deleter(load))


def summary(t: Tally) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, values in sorted(t.latencies.items()):
        ordered = sorted(values)
        out[kind] = {
            "requests": len(ordered),
            "errors": t.errors.get(kind, {}),
            "p50_ms": round(statistics.median(ordered), 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 1),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scifact", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--pause", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    data = args.work / "data"
    if data.exists():
        shutil.rmtree(data)
    shutil.copytree(args.scifact, data)
    from benchmarks.common import SCIFACT
    from citewell.evaluation.beir import load_beir

    queries = list(load_beir(SCIFACT, "test").queries.values())
    port, tally, samples = 18000 + os.getpid() % 1000, Tally(), []
    load = Load(None, tally, "", queries, 0.0, args.pause)  # type: ignore[arg-type]
    base = f"http://127.0.0.1:{port}"
    seconds = args.minutes * 30
    with serve(FakeService(dimension=64)) as fake:
        envs = [{}, {"CITEWELL_EMBEDDING_ENGINE": "openai",
                     "CITEWELL_EMBEDDING_BASE_URL": fake + "/v1",
                     "CITEWELL_EMBEDDING_MODEL": "fake-64"}]  # fmt: skip
        for phase, env in enumerate(envs):
            server = start(data, port, env, args.workers, args.work / f"server-{phase + 1}.log")
            sampler_stop = time.monotonic() + seconds

            async def run() -> None:
                async def sampler() -> None:
                    while time.monotonic() < sampler_stop:  # noqa: B023
                        samples.append({"phase": phase, **sample(server.pid)})  # noqa: B023
                        await asyncio.sleep(10)

                await asyncio.gather(half(base, load, seconds), sampler())

            asyncio.run(run())
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)
    result = {"minutes": args.minutes, "workers": args.workers, "requests": summary(tally)}
    for phase in (0, 1):
        mine = [s for s in samples if s["phase"] == phase]
        warm = [s for s in mine if s["t"] - mine[0]["t"] >= 60] or mine
        result[f"half_{phase + 1}"] = {
            "pss_mb_after_warmup": warm[0]["pss_mb"],
            "pss_mb_end": mine[-1]["pss_mb"],
            "pss_mb_max": max(s["pss_mb"] for s in mine),
            "open_files_after_warmup": warm[0]["open_files"],
            "open_files_end": mine[-1]["open_files"],
            "open_files_max": max(s["open_files"] for s in mine),
            "open_files_by_kind_after_warmup": warm[0]["open_files_by_kind"],
            "open_files_by_kind_end": mine[-1]["open_files_by_kind"],
        }
    (args.work / "soak.json").write_text(json.dumps({**result, "samples": samples}, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
