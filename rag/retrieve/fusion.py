"""Score fusion of the dense and BM25 sides (see FUSIONS in rag.retrieve.settings)."""

from __future__ import annotations

import numpy as np

from rag.retrieve.settings import HYBRID_WEIGHT


def minmax(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {k: (v - lo) / span if span > 0 else 1.0 for k, v in scores.items()}


def fuse_minmax(dense: dict[str, float], sparse: dict[str, float], weight: float = HYBRID_WEIGHT) -> dict[str, float]:
    """Min-max normalise each side over its candidates, then weight·dense + (1-weight)·sparse (absent = 0)."""
    d, s = minmax(dense), minmax(sparse)
    return {i: weight * d.get(i, 0.0) + (1 - weight) * s.get(i, 0.0) for i in d.keys() | s.keys()}


def zscore_fuse(dense: np.ndarray, sparse: np.ndarray, weight: float) -> np.ndarray:
    """weight·z(dense) + (1-weight)·z(sparse), each z-scored over all documents of its row."""

    def z(x):
        x = np.atleast_2d(x).astype(np.float32)
        return (x - x.mean(1, keepdims=True)) / np.maximum(x.std(1, keepdims=True), 1e-9)

    return weight * z(dense) + (1 - weight) * z(sparse)


def top_k(scores: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: -kv[1])[:k]
