"""A cross-encoder from a local model directory, run with onnxruntime.

The directory holds ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json``; the model
takes input_ids/attention_mask (and token_type_ids if it declares them) for (query, passage)
pairs and returns one logit per pair (or two, the second being "relevant").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from citewell.errors import ConfigError
from citewell.rerankers.base import apply_scores
from citewell.types import ScoredChunk


def _find(directory: Path, *names: str) -> Path:
    for name in names:
        if (directory / name).is_file():
            return directory / name
    raise ConfigError(
        f"No {names[0]} in {directory}; reranking_model must be a directory with an ONNX "
        "cross-encoder (model.onnx) and its tokenizer.json."
    )


class CrossEncoderReranker:
    def __init__(self, model_dir: Path, batch_size: int = 16, max_tokens: int = 512) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if not model_dir.is_dir():
            raise ConfigError(f"reranking_model {model_dir} is not a directory.")
        self._tokenizer: Any = Tokenizer.from_file(str(_find(model_dir, "tokenizer.json")))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(_find(model_dir, "model.onnx", "onnx/model.onnx")), options
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self.batch_size = batch_size

    def rerank(
        self, query: str, candidates: Sequence[ScoredChunk], top_k: int
    ) -> list[ScoredChunk]:
        scores: list[float] = []
        for i in range(0, len(candidates), self.batch_size):
            batch = candidates[i : i + self.batch_size]
            scores.extend(self._score(query, [c.chunk.text for c in batch]))
        return apply_scores(candidates, scores, top_k)

    def _score(self, query: str, passages: list[str]) -> list[float]:
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float64)
        logits = logits.reshape(len(passages), -1)[:, -1]
        return list(1.0 / (1.0 + np.exp(-logits)))  # sigmoid: relevance in 0..1
