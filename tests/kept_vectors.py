"""Vectors the SciFact runs keep between test runs on one machine.

Embedding SciFact's ~15,000 chunks was 29 % of the suite's time (the int8 MiniLM encoder at its
two-core ceiling, journal "Where stage 1's time goes"). A vector is a function of the model and
the text, so each run starts from the embedding cache the last run on this machine left and puts
its own back; what the run measures (chunking, both indexes, fusion, the queries) is unchanged.

Checked before every use: a fixed set of SciFact texts is embedded afresh, by the code under
test, and compared with the vectors kept with the cache. A change to the model, the tokenizer or
the embedder's code that moves a vector drops the kept cache, and the run embeds everything.

CITEWELL_TEST_VECTORS=off embeds everything every time; CITEWELL_TEST_VECTORS=DIR keeps the
files in DIR (default: $XDG_CACHE_HOME/citewell-tests, ~/.cache/citewell-tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import warnings
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import numpy as np

from citewell.embedders.onnx import OnnxEmbedder, packaged_model_path, packaged_tokenizer_path

# The int8 encoder's vector of one text moves a little with the batch it ran in (activations
# are quantized per batch): by cosines of 0.9999998 and above here, alone or in a batch. A
# changed model, pooling or truncation moves it far more.
SAME_VECTOR = 0.9999
# A cache grown past this (chunking changed many times) starts over rather than grow for ever.
MOST_BYTES = 256 * 1024 * 1024
PROBE_DOCS = 16


def kept_dir() -> Path | None:
    chosen = os.environ.get("CITEWELL_TEST_VECTORS", "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "citewell-tests"


def model_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in (packaged_model_path(), packaged_tokenizer_path()):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def probe_texts(beir: Path) -> list[str]:
    """Whole SciFact documents (many past the 256-token cut) and two short queries."""
    texts = []
    with (beir / "corpus.jsonl").open() as corpus:
        for line, _ in zip(corpus, range(PROBE_DOCS), strict=False):
            doc = json.loads(line)
            texts.append(f"{doc['title']}\n{doc['text']}")
    return [*texts, "0-dimensional biomaterials show inductive properties.", "ALDH1 expression"]


def probe_vectors(texts: list[str], embedder: OnnxEmbedder) -> np.ndarray:
    batch = embedder.embed(texts[:-2])
    queries = [embedder.embed([query], kind="query")[0] for query in texts[-2:]]
    return np.vstack([batch, *queries])


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy, WAL included (a plain file copy could miss the last writes)."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def _usable(cache: Path, probes: Path, fresh: np.ndarray) -> bool:
    if not (cache.is_file() and probes.is_file()) or cache.stat().st_size > MOST_BYTES:
        return False
    kept = np.load(probes)
    if kept.shape != fresh.shape:
        return False
    return bool((np.sum(kept * fresh, axis=1) >= SAME_VECTOR).all())


@contextmanager
def kept_vectors(name: str, data_dir: Path, beir: Path, embedder: OnnxEmbedder) -> Iterator[None]:
    """Around a run on ``data_dir``: start its embedding cache from the kept one, keep it after.
    ``embedder`` (the tests' own, loaded once) embeds the probes.

    ``name`` keeps runs that may go at once (two test workers) in separate files. Keeping is
    a convenience: a folder that cannot be read or written (no home, a full disk) only costs
    the run its time, with a warning, never the test."""
    folder = kept_dir()
    if folder is None:
        yield
        return
    fingerprint = model_fingerprint()
    cache = folder / f"{name}-{fingerprint}.sqlite"
    probes = folder / f"{name}-{fingerprint}-probes.npy"
    fresh = probe_vectors(probe_texts(beir), embedder)
    data_dir.mkdir(parents=True, exist_ok=True)
    target = data_dir / "embeddings.sqlite"
    try:
        if _usable(cache, probes, fresh):
            _copy_sqlite(cache, target)
    except (OSError, ValueError, sqlite3.Error) as exc:
        target.unlink(missing_ok=True)  # a half-copied cache: the run embeds everything
        warnings.warn(f"The kept vectors in {folder} were not used: {exc}", stacklevel=3)
    yield
    try:
        _keep(name, target, cache, probes, fresh)
    except (OSError, sqlite3.Error) as exc:
        warnings.warn(f"The vectors were not kept in {folder}: {exc}", stacklevel=3)


def _keep(name: str, source: Path, cache: Path, probes: Path, fresh: np.ndarray) -> None:
    """``source`` kept as ``cache`` with its probes; other models' files of ``name`` go."""
    folder = cache.parent
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f"{name}-*"):
        if stale not in (cache, probes) and stale.suffix != ".partial":
            stale.unlink(missing_ok=True)
    partial = folder / f"{name}-{os.getpid()}.partial"
    try:
        _copy_sqlite(source, partial)
        partial.replace(cache)  # whole or not at all, for a run that reads it meanwhile
    finally:
        partial.unlink(missing_ok=True)
    np.save(probes, fresh)
