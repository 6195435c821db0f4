"""Can one tenant tell from timing what another stores? And can one user's embedding work
move another user's search latency? (issue 45)

One `citewell serve` (auth required) on a fresh data dir with three users. Alice stores
sentences (each with a number in it) in a KB of her own. Then:

- **embedding guesses**: Bob sends ``/v1/embeddings`` a right guess of one of Alice's
  sentences and a wrong one (another number), interleaved in random order, ``--trials``
  each; a new sentence of Alice's per trial, so no guess of Bob's is ever repeated.
- **upload guesses**: Bob uploads into a KB of his own the exact bytes of one of Alice's
  files (right) or bytes nobody has (wrong), ``--trials`` each.
- **embedding load**: Carol's search p50 alone, then while Bob runs three concurrent
  ``/v1/embeddings`` requests of 2,048 inputs each, over and over.

For each guess pair the report gives both medians and a two-sided Mann–Whitney U test
(normal approximation with tie correction): p well above 0.05 means the two cannot be told
apart; p below it means they can. The embedding load gives Carol's p50 alone and under load
and their ratio (the issue asks for at most 2×).

    .venv/bin/python -m benchmarks.side_channels --trials 80 --work /tmp/side
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.serving import CLI, free_port, start_server

SENTENCE = "Project {word} acquires the {thing} company for {n} million euros in {year}."
THINGS = ["duck pond", "lighthouse", "orchard", "ferry", "brewery", "observatory", "mill"]


def cli(data: Path, *args: str) -> str:
    import subprocess

    command = [*CLI, "--data-dir", str(data), *args]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"citewell {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def sentence(rng: random.Random, n: int | None = None) -> str:
    word = "".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(4))
    return SENTENCE.format(
        word=word.title(),
        thing=rng.choice(THINGS),
        n=n if n is not None else rng.randint(2, 999),
        year=rng.randint(1990, 2030),
    )


def mann_whitney(a: list[float], b: list[float]) -> dict[str, float]:
    """Two-sided Mann–Whitney U: U of ``a``, z and p (normal approximation, ties
    corrected)."""
    pooled = sorted((v, i < len(a)) for i, v in enumerate([*a, *b]))
    ranks: list[float] = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        ties += (j - i + 1) ** 3 - (j - i + 1)
        i = j + 1
    n1, n2 = len(a), len(b)
    rank_sum = sum(r for r, (_, first) in zip(ranks, pooled, strict=True) if first)
    u = rank_sum - n1 * (n1 + 1) / 2
    n = n1 + n2
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    z = (u - n1 * n2 / 2) / sigma if sigma else 0.0
    p = math.erfc(abs(z) / math.sqrt(2))
    return {"u": u, "z": round(z, 3), "p": round(p, 4)}


def compared(right: list[float], wrong: list[float]) -> dict[str, Any]:
    test = mann_whitney(right, wrong)
    return {
        "trials": [len(right), len(wrong)],
        "right_median_ms": round(statistics.median(right) * 1000, 2),
        "wrong_median_ms": round(statistics.median(wrong) * 1000, 2),
        **test,
        "told_apart": test["p"] < 0.05,
    }


def timed_post(client: httpx.Client, path: str, **kwargs: Any) -> tuple[float, httpx.Response]:
    began = time.perf_counter()
    response = client.post(path, **kwargs)
    return time.perf_counter() - began, response


def embedding_guesses(
    alice: httpx.Client, bob: httpx.Client, kb: str, trials: int, rng: random.Random
) -> dict[str, Any]:
    """Alice stores a sentence; Bob embeds it (right) or the same with another number."""
    times: dict[bool, list[float]] = {True: [], False: []}
    order = [True] * trials + [False] * trials
    rng.shuffle(order)
    for n, right in enumerate(order):
        secret = sentence(rng, n=100 + n)
        stored = alice.post(
            f"/api/v1/knowledge/{kb}/text", json={"name": f"s{n}.md", "content": secret}
        )
        stored.raise_for_status()
        guess = secret if right else secret.replace(f" {100 + n} ", f" {5000 + n} ")
        took, answer = timed_post(
            bob, "/v1/embeddings", json={"model": "all-MiniLM-L6-v2", "input": guess}
        )
        answer.raise_for_status()
        times[right].append(took)
    return compared(times[True], times[False])


def upload_guesses(
    alice: httpx.Client, bob: httpx.Client, kb: str, trials: int, rng: random.Random
) -> dict[str, Any]:
    """Alice uploads a file; Bob uploads its exact bytes (right) or fresh bytes (wrong)."""
    bobs = bob.post("/api/v1/knowledge", json={"name": "bob-guesses"}).json()["id"]
    times: dict[bool, list[float]] = {True: [], False: []}
    order = [True] * trials + [False] * trials
    rng.shuffle(order)
    for n, right in enumerate(order):
        body = "\n\n".join(sentence(rng) for _ in range(6)).encode()
        alice.post(
            f"/api/v1/knowledge/{kb}/files", files={"file": (f"f{n}.md", body)}
        ).raise_for_status()
        data = body if right else "\n\n".join(sentence(rng) for _ in range(6)).encode()
        took, answer = timed_post(
            bob, f"/api/v1/knowledge/{bobs}/files", files={"file": (f"g{n}.md", data)}
        )
        answer.raise_for_status()
        times[right].append(took)
    return compared(times[True], times[False])


def search_p50(client: httpx.Client, kb: str, queries: int, rng: random.Random) -> float:
    took = []
    for n in range(queries):
        query = f"who bought the {rng.choice(THINGS)} in {1990 + n % 40}"
        seconds, answer = timed_post(
            client,
            "/api/v1/retrieval/query/collection",
            json={"collection_names": [kb], "query": query, "k": 5},
        )
        answer.raise_for_status()
        took.append(seconds)
    return statistics.median(took)


def embedding_load(
    base: str, keys: dict[str, str], carol_kb: str, queries: int, rng: random.Random
) -> dict[str, Any]:
    """Carol's search p50 alone and while Bob keeps three 2,048-input requests going."""
    carol = httpx.Client(
        base_url=base, headers={"Authorization": f"Bearer {keys['carol']}"}, timeout=300
    )
    search_p50(carol, carol_kb, 10, rng)  # warm
    alone = search_p50(carol, carol_kb, queries, rng)
    stop = threading.Event()
    batches = [0]

    def flood(seed: int) -> None:
        local = random.Random(seed)
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {keys['bob']}"}, timeout=600
        ) as bob:
            while not stop.is_set():
                inputs = [sentence(local) for _ in range(2048)]
                bob.post(
                    "/v1/embeddings", json={"model": "all-MiniLM-L6-v2", "input": inputs}
                ).raise_for_status()
                batches[0] += 1

    threads = [threading.Thread(target=flood, args=(s,), daemon=True) for s in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(2)  # the requests are running
    loaded = search_p50(carol, carol_kb, queries, rng)
    stop.set()
    for thread in threads:
        thread.join(timeout=600)
    carol.close()
    return {
        "alone_p50_ms": round(alone * 1000, 2),
        "loaded_p50_ms": round(loaded * 1000, 2),
        "ratio": round(loaded / alone, 2),
        "embedding_batches_done": batches[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=80)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--work", type=Path, default=Path("/tmp/citewell-side-channels"))
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    data = args.work / "data"
    keys = {}
    for name in ("alice", "bob", "carol"):
        cli(data, "user", "create", name, "--no-password")
        keys[name] = cli(data, "key", "create", "--user", name, "--name", "bench")
    port = free_port()
    server = start_server(
        data, port, [], {"CITEWELL_AUTH": "required", "CITEWELL_RATE_LIMIT_PER_MINUTE": "0"}
    )
    base = f"http://127.0.0.1:{port}"
    rng = random.Random(45)
    try:
        clients = {
            n: httpx.Client(base_url=base, headers={"Authorization": f"Bearer {k}"}, timeout=300)
            for n, k in keys.items()
        }
        alice_kb = clients["alice"].post("/api/v1/knowledge", json={"name": "merger"}).json()["id"]
        carol_kb = clients["carol"].post("/api/v1/knowledge", json={"name": "notes"}).json()["id"]
        for n in range(40):
            clients["carol"].post(
                f"/api/v1/knowledge/{carol_kb}/text",
                json={"name": f"c{n}.md", "content": sentence(rng)},
            ).raise_for_status()
        report = {
            "embedding_guesses": embedding_guesses(
                clients["alice"], clients["bob"], alice_kb, args.trials, rng
            ),
            "upload_guesses": upload_guesses(
                clients["alice"], clients["bob"], alice_kb, args.trials, rng
            ),
            "embedding_load": embedding_load(base, keys, carol_kb, args.queries, rng),
        }
        print(json.dumps(report, indent=2))
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    main()
