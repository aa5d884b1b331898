"""ONNX Runtime sessions for the agent's two fine-tuned MiniLM models (the span reader, the injection classifier).

Each model ships as small adapter weights (.npz); the first use merges them into the packaged MiniLM and exports
ONNX once to RAG_CACHE_DIR/onnx/<name>-<sha of the weights>/model.onnx, with a sha256 beside it, like
rag.encoders.onnx does for the query encoder (new weights, a new export; a file that fails its sha256 is
re-exported). Only that export imports torch. A model asked for in int8 is quantized from that export once
(rag.encoders.onnx.quantize_int8) into model.int8.onnx beside it, with its own sha256.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from rag.config import RagError, cache_dir


def weights_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def onnx_file(name: str, weights: Path, retrain: str) -> Path:
    """RAG_CACHE_DIR/onnx/<name>-<sha of the weights>/model.onnx."""
    if not weights.exists():
        raise RagError(f"no {name} weights at {weights}; train them with: {retrain}")
    return cache_dir() / "onnx" / f"{name}-{weights_sha256(weights)[:16]}" / "model.onnx"


def load_session(
    name: str,
    weights: Path,
    export: Callable[[Path, Path], None],
    retrain: str,
    threads: int | None,
    int8: bool = False,
):
    """An ONNX Runtime session for a model, exporting it first (export(weights, target)) when the cache lacks it;
    int8: the dynamically quantized variant (about twice as fast on a CPU)."""
    try:
        import onnxruntime as ort
    except ImportError as exc:
        from rag.encoders.onnx import MISSING_ORT

        raise RagError(MISSING_ORT) from exc
    from rag.encoders.onnx import cached_model, export_lock, quantize_int8

    fp32 = onnx_file(name, weights, retrain)

    def make_int8(tmp: Path) -> None:
        cached_model(fp32, lambda t: export(weights, t))  # the export it is quantized from, verified or made
        quantize_int8(fp32, tmp)

    with export_lock(fp32.parent):
        if int8:  # the fp32 export is read only when the int8 file has to be made
            data = cached_model(fp32.with_name("model.int8.onnx"), make_int8)
        else:
            data = cached_model(fp32, lambda tmp: export(weights, tmp))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
