"""Would a truly int8 encoder keep retrieval quality? SciFact nDCG@10 with the packaged model
and with a dynamically quantised copy of it, side by side.

The packaged "int8" model stores int8 weights but onnxruntime folds its Cast+Mul back into
fp32 MatMuls, so it computes in fp32. Folding those weights to constants and then running
``quantize_dynamic`` (onnxruntime's own tool: int8 weights, MatMulInteger with activations
quantised per batch) makes a graph that really runs in int8. Each model ingests the whole
corpus into its own fresh data dir (empty embedding cache) and is evaluated in every mode;
ingestion time is reported too (the machine may be shared: read the ratio).

    python benchmarks/int8_quality.py --work /tmp/int8
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("RUST_LOG", "error")

from benchmarks.common import SCIFACT  # noqa: E402
from citewell import Citewell, SearchMode, Settings  # noqa: E402
from citewell.embedders.onnx import OnnxEmbedder, packaged_model_path  # noqa: E402
from citewell.evaluation.beir import run_eval  # noqa: E402


def quantised(work: Path) -> Path:
    """The packaged model with its weights folded to fp32 constants (onnxruntime's basic graph
    optimisation folds the Cast+Mul), then dynamically quantised. Quantising the packaged
    file directly changes nothing: its MatMuls take computed weights, not constants."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded, target = work / "minilm-folded.onnx", work / "minilm-folded-int8.onnx"
    if not target.exists():
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(
            str(packaged_model_path()), options, providers=["CPUExecutionProvider"]
        )
        quantize_dynamic(str(folded), str(target), weight_type=QuantType.QInt8)
    return target


def evaluate(data_dir: Path, embedder: OnnxEmbedder) -> dict:
    app = Citewell.from_settings(Settings.load(data_dir=data_dir), embedder=embedder)
    try:
        return run_eval(app, SCIFACT, "test", list(SearchMode))
    finally:
        app.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--only", choices=["packaged", "dynamic"], default=None)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    models = {"packaged": None, "dynamic": quantised(args.work)}
    out = {}
    for name, path in models.items():
        if args.only and name != args.only:
            continue
        report = evaluate(args.work / name, OnnxEmbedder(model_path=path))
        out[name] = {
            "docs_per_s": report["ingest"]["docs_per_s"],
            **{m.value: report[m.value]["ndcg@10"] for m in SearchMode},
        }
        print(json.dumps({name: out[name]}), flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
