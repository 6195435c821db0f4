"""One user sending huge chat messages, another searching: does the second wait?

Starts `citewell serve` (auth off, no LLM) on a free port, then measures a retrieval request
(`/api/v1/retrieval/query/collection`) idle and while ``--senders`` clients post 8.8 MB chat
messages back to back, from a separate process at the lowest CPU priority (``nice 19``: on
a 2-core box the senders' own CPU would otherwise be what is measured). ``--src`` runs
another checkout's code (e.g. a worktree of an older commit) for a side-by-side figure.

    .venv/bin/python -m benchmarks.big_messages [--senders 3] [--words 800000] [--src /tmp/old/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from citewell.testing.processes import free_port
from citewell.testing.served import kill, start_server

SENDER = """
import json, sys, threading, time, httpx
url, kb, seconds, senders = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
words = int(sys.argv[5])
body = json.dumps({"model": "citewell-extractive", "knowledge_collections": [kb],
                   "messages": [{"role": "user", "content": "typewriter " * words}]}).encode()
end = time.monotonic() + seconds
lock = threading.Lock()
def send():
    with httpx.Client(base_url=url, timeout=600) as client:
        while time.monotonic() < end:
            began = time.perf_counter()
            try:
                status = client.post("/v1/chat/completions", content=body,
                                     headers={"Content-Type": "application/json"}).status_code
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            with lock:
                print(json.dumps({"status": status, "s": time.perf_counter() - began}), flush=True)
threads = [threading.Thread(target=send) for _ in range(senders)]
[t.start() for t in threads]
[t.join() for t in threads]
"""


def retrieval_ms(client: httpx.Client, kb: str, count: int, budget: float) -> list[float]:
    """Up to ``count`` timed searches, stopping after ``budget`` seconds."""
    times: list[float] = []
    end = time.monotonic() + budget
    while len(times) < count and time.monotonic() < end:
        began = time.perf_counter()
        client.post(
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [kb], "query": "When was the typewriter invented?"},
        ).raise_for_status()
        times.append((time.perf_counter() - began) * 1000)
    return times


def run(senders: int, seconds: float, src: str | None, words: int) -> dict[str, object]:
    port, data = free_port(), Path(tempfile.mkdtemp(prefix="citewell-big-"))
    env = {"PYTHONPATH": src} if src else {}
    server = start_server(data, port, env)
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=600) as client:
            kb = client.post("/api/v1/knowledge", json={"name": "typewriters"}).json()["id"]
            client.post(
                f"/api/v1/knowledge/{kb}/text",
                json={
                    "name": "history.txt",
                    "content": "The typewriter was invented in 1868. " * 20,
                },
            ).raise_for_status()
            retrieval_ms(client, kb, 5, 30)
            idle = retrieval_ms(client, kb, 25, 60)
            flood = subprocess.Popen(
                ["nice", "-n", "19", sys.executable, "-c", SENDER, url, kb, str(seconds)]
                + [str(senders), str(words)],
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(3)
            loaded = retrieval_ms(client, kb, 25, seconds - 3)
            out, _ = flood.communicate(timeout=seconds + 900)
    finally:
        kill(server)
    chats = [json.loads(line) for line in out.splitlines()]
    return {
        "senders": senders,
        "message_chars": words * 11,
        "idle_p50_ms": round(statistics.median(idle), 1),
        "loaded_p50_ms": round(statistics.median(loaded), 1) if loaded else None,
        "loaded_searches": len(loaded),
        "ratio": round(statistics.median(loaded) / statistics.median(idle), 2) if loaded else None,
        "chats": len(chats),
        "chat_statuses": sorted({str(c["status"]) for c in chats}),
        "chat_p50_s": round(statistics.median(c["s"] for c in chats), 3) if chats else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--senders", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--src", help="a checkout's src/ to run instead of this one")
    parser.add_argument(
        "--words", type=int, default=800_000, help="'typewriter ' this many times (8.8 MB)"
    )
    args = parser.parse_args()
    src = args.src and os.path.abspath(args.src)
    print(json.dumps(run(args.senders, args.seconds, src, args.words)))


if __name__ == "__main__":
    main()
