"""Byte-level mutation of the shared fixtures, recorded as replayable recipes.

A crasher is stored as (fixture name, mutation ops), never as bytes: the fixtures are
evaluation data that stays outside the repository, so the regression test rebuilds each
crashing input from ../shared/data/docs at run time.

    python -m tests.fuzz.mutate --seed 1 --iterations 300   # hunt; appends to crashers.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
from pathlib import Path
from typing import Any

from citewell.errors import CitewellError
from citewell.loaders import DocumentReader, sniff

CRASHERS = Path(__file__).with_name("crashers.json")
SEEDS = [
    "fake.doc",
    "fake-power-point.ppt",
    "test.xls",
    "test_outlook_msg.msg",
    "fake-email.eml",
    "fake-doc.rtf",
    "fake.odt",
    "fake.docx",
    "fake-power-point.pptx",
    "stanley-cups.xlsx",
    "test.epub",
    "fake-memo.pdf",
    "test_mskanji.csv",
    "lang_eng_spa_mult.html",
]
Op = list[Any]  # ["set", pos, byte] | ["del", pos, n] | ["ins", pos, hex] | ["cut", length]


def random_ops(rng: random.Random, size: int) -> list[Op]:
    ops: list[Op] = []
    for _ in range(rng.randint(1, 20)):
        if size <= 1:
            break
        pos, roll = rng.randrange(size), rng.random()
        if roll < 0.6:
            ops.append(["set", pos, rng.randrange(256)])
        elif roll < 0.8:
            n = rng.randint(1, 64)
            ops.append(["del", pos, n])
            size -= min(n, size - pos)
        else:
            insert = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            ops.append(["ins", pos, insert.hex()])
            size += len(insert)
    if size > 1 and rng.random() < 0.2:
        ops.append(["cut", rng.randrange(size)])
    return ops


def apply(data: bytes, ops: list[Op]) -> bytes:
    buffer = bytearray(data)
    for op in ops:
        if op[0] == "set":
            buffer[op[1]] = op[2]
        elif op[0] == "del":
            del buffer[op[1] : op[1] + op[2]]
        elif op[0] == "ins":
            buffer[op[1] : op[1]] = bytes.fromhex(op[2])
        elif op[0] == "cut":
            del buffer[op[1] :]
    return bytes(buffer)


def load_directly(data: bytes, name: str) -> None:
    """The loader itself, bypassing the reader's catch-all: only CitewellError may escape."""
    mime_type = sniff(data, name) or "text/plain"
    with contextlib.suppress(CitewellError):
        DocumentReader(ocr=None).loader_for(mime_type).load(data, name)


def hunt(docs: Path, seed: int, iterations: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    found: list[dict[str, Any]] = []
    signal.signal(signal.SIGALRM, _timeout)
    for name in SEEDS:
        original = (docs / name).read_bytes()
        for _ in range(iterations):
            ops = random_ops(rng, len(original))
            signal.alarm(20)
            try:
                load_directly(apply(original, ops), name)
            except Exception as exc:  # noqa: BLE001 - that is what we are hunting
                found.append({"fixture": name, "ops": ops, "error": type(exc).__name__})
                print(name, type(exc).__name__, str(exc)[:100])  # noqa: T201
            finally:
                signal.alarm(0)
    return found


def _timeout(*_: object) -> None:
    raise TimeoutError("a loader ran past 20 s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=Path, default=Path("../shared/data/docs"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    found = hunt(args.docs, args.seed, args.iterations)
    known = json.loads(CRASHERS.read_text()) if CRASHERS.exists() else []
    CRASHERS.write_text(json.dumps(known + found, indent=1) + "\n")
    print(f"{len(found)} new crashers; {len(known) + len(found)} in {CRASHERS.name}")  # noqa: T201


if __name__ == "__main__":
    main()
