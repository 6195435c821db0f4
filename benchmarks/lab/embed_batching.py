"""Encoder batches sorted by characters (before) or by tokens (now), side by side.

Both orders embed exactly the texts the pipeline embeds for the first DOCS SciFact documents,
with the same session, alternating, ROUNDS times each; the figure is the ratio of medians.
Also reported: the padded tokens each order makes the encoder run (over the real ones), and
the largest difference between the two orders' vectors.

    python -m benchmarks.lab.embed_batching --docs 300 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from benchmarks.common import encoder_and_texts, scifact_docs, timed  # noqa: E402
from citewell.embedders import OnnxEmbedder  # noqa: E402
from citewell.embedders.onnx import token_batches  # noqa: E402

BATCH = 32  # texts per run in both orders, one run at a time on all cores, as then


def by_characters(embedder: OnnxEmbedder, texts: list[str]) -> np.ndarray:
    """The earlier order: batches of texts of similar length in characters, each batch
    tokenized (and padded) on its own."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for start in range(0, len(order), BATCH):
        batch = order[start : start + BATCH]
        ids, mask = embedder._tokenize([texts[i] for i in batch])
        out[batch] = embedder._encode(ids, mask, embedder._wide_session)
    return out


def by_tokens(embedder: OnnxEmbedder, texts: list[str]) -> np.ndarray:
    """Batches of similar token length cut from one tokenization, run one after another
    through the session that splits each run over all cores (the way until
    embed_threads.py's change)."""
    ids, mask = embedder._tokenize(texts)
    lengths = mask.sum(axis=1)
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for batch in token_batches(lengths, BATCH):
        width = int(lengths[batch].max())
        out[batch] = embedder._encode(
            ids[batch, :width], mask[batch, :width], embedder._wide_session
        )
    return out


def padded_tokens(embedder: OnnxEmbedder, texts: list[str]) -> dict[str, float]:
    _, mask = embedder._tokenize(texts)
    lengths = mask.sum(axis=1)
    real = int(lengths.sum())
    chars = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    size = BATCH

    def run(batches: list[list[int]] | list[np.ndarray]) -> int:
        return sum(int(lengths[list(b)].max()) * len(b) for b in batches)

    by_chars = run([chars[i : i + size] for i in range(0, len(chars), size)])
    by_tokens = run(token_batches(lengths, size))
    return {
        "real_tokens": real,
        "padding_by_characters": round(by_chars / real - 1, 4),
        "padding_by_tokens": round(by_tokens / real - 1, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    embedder, texts = encoder_and_texts(scifact_docs(args.docs))
    before, now = [], []
    for _ in range(args.rounds):
        before.append(timed(lambda: by_characters(embedder, texts)))
        now.append(timed(lambda: by_tokens(embedder, texts)))
    difference = np.abs(by_characters(embedder, texts) - by_tokens(embedder, texts)).max()
    print(
        json.dumps(
            {
                "docs": args.docs,
                "chunks": len(texts),
                "rounds": args.rounds,
                **padded_tokens(embedder, texts),
                "by_characters_s": round(statistics.median(before), 2),
                "by_tokens_s": round(statistics.median(now), 2),
                "speedup": round(statistics.median(before) / statistics.median(now), 3),
                "max_vector_difference": float(difference),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
