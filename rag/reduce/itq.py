"""Iterative quantisation (Gong & Lazebnik 2011): an orthogonal rotation that makes sign bits lose the least.

A rotation leaves every inner product as it was, so float indexes score exactly as before; only the binary
index (one sign bit per coordinate) changes, and for the better: PCA piles the variance into the first
components, while sign bits give every component the same weight; the rotation spreads the variance out.
"""
from __future__ import annotations

import numpy as np

ITERATIONS = 50


def itq_rotation(v: np.ndarray, iterations: int = ITERATIONS, seed: int = 0) -> np.ndarray:
    """The [d, d] rotation R minimising ||sign(vR) - vR||² over the rows of v (centred, reduced vectors)."""
    v = np.asarray(v, np.float64)
    d = v.shape[1]
    rng = np.random.default_rng(seed)
    r, _ = np.linalg.qr(rng.standard_normal((d, d)))
    for _ in range(iterations):
        b = np.sign(v @ r)
        b[b == 0] = 1
        u, _, wt = np.linalg.svd(v.T @ b)  # fix the codes, solve the orthogonal Procrustes problem
        r = u @ wt
    return r
