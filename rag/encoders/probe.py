"""The probe set stored with each index: a few documents and their full-width vectors, as the build encoded them.

An index built with one encoder backend (torch, onnx, onnx-int8) may be queried with another only if that
backend reproduces the stored vectors: mean cosine ≥ PROBE_MIN_COSINE over the probe documents. The verdict is
cached per (probe checksum, backend) in RAG_CACHE_DIR/probe-checks/, so only the first query process pays for the
probe encode.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from rag.config import RagError, atomic_write_text, cache_dir

PROBE_SIZE = 8
PROBE_MIN_COSINE = 0.99


class BackendDisagrees(RagError):
    """The query backend does not reproduce an index's probe vectors; `built` is the backend that built it."""

    def __init__(self, message: str, built: str, agreement: dict):
        super().__init__(message)
        self.built, self.agreement = built, agreement


def make_probe(texts: list[str], vectors: np.ndarray, size: int = PROBE_SIZE) -> dict[str, np.ndarray]:
    """Evenly spaced documents and their vectors (arrays for np.savez; the texts load without pickle)."""
    rows = np.unique(np.linspace(0, len(texts) - 1, num=min(size, len(texts))).astype(int)) if texts else []
    return {
        "texts": np.array([texts[i] for i in rows], dtype=str),
        "vectors": np.asarray(vectors[rows], np.float32).reshape(len(rows), -1),
    }


def probe_agreement(encoder, probe: dict[str, np.ndarray]) -> dict:
    """Cosine of the encoder's vectors of the probe texts against the stored ones: {mean, min, n}."""
    texts = [str(t) for t in probe["texts"]]
    if not texts:
        return {"mean": 1.0, "min": 1.0, "n": 0}
    mine = encoder.encode(texts, kind="document")
    stored = probe["vectors"]
    cos = (mine * stored).sum(1) / np.maximum(np.linalg.norm(mine, axis=1) * np.linalg.norm(stored, axis=1), 1e-12)
    return {"mean": float(cos.mean()), "min": float(cos.min()), "n": len(texts)}


def check_probe(path, probe_digest: str, encoder, built: str, backend: str, hint: str) -> dict:
    """Accept querying an index built with backend `built` through `encoder` (backend `backend`), or refuse.

    path: the index's probe.npz; probe_digest: its sha256 from the manifest (the cache key of the verdict)."""
    key = hashlib.sha256(f"{probe_digest}:{encoder.name}:{backend}".encode()).hexdigest()[:24]
    verdict_file = cache_dir() / "probe-checks" / f"{key}.json"
    if verdict_file.exists():
        try:
            agreement = json.loads(verdict_file.read_text())
        except json.JSONDecodeError:
            agreement = None
    else:
        agreement = None
    if agreement is None:
        with np.load(path) as f:
            agreement = probe_agreement(encoder, {k: f[k] for k in f.files})
        atomic_write_text(verdict_file, json.dumps(agreement))
    if agreement["mean"] < PROBE_MIN_COSINE:
        raise BackendDisagrees(
            f"this index was built with the {built} backend and {backend} vectors disagree with it on its "
            f"probe set (mean cosine {agreement['mean']:.4f} < {PROBE_MIN_COSINE}); "
            f"query with --backend {built}, or {hint}",
            built,
            agreement,
        )
    return agreement


def accept_backend(folder, manifest: dict, encoder_name: str, backend: str | None, hint: str) -> dict | None:
    """Check that an index (its version folder and manifest) can be queried with `backend`; None when it was
    built with that very backend, else the probe agreement, or a RagError with a hint.

    Indexes from before backends were recorded count as torch. One without a probe set is accepted only for a
    backend whose vectors are declared the same (torch and fp32 ONNX, rag.encoders.ENCODER_BACKENDS)."""
    from rag.encoders import check_backend, get_encoder, vector_name

    backend = check_backend(encoder_name, backend)
    built = manifest.get("backend", "torch")
    if built == backend:
        return None
    digest = manifest.get("files", {}).get("probe.npz")
    if digest:
        return check_probe(folder / "probe.npz", digest, get_encoder(encoder_name, backend), built, backend, hint)
    if vector_name(encoder_name, built) == vector_name(encoder_name, backend):
        return {"mean": None, "min": None, "n": 0, "same_vectors": True}
    raise RagError(
        f"this index was built with the {built} backend and stores no probe set to check {backend} "
        f"vectors against; query with --backend {built}, or {hint}"
    )
