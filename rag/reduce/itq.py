"""Iterative quantisation (Gong & Lazebnik 2011): an orthogonal rotation that makes sign bits lose the least.

A rotation leaves every inner product as it was, so float indexes score exactly as before; only the binary
index (one sign bit per coordinate) changes, and for the better: PCA piles the variance into the first
components, while sign bits give every component the same weight; the rotation spreads the variance out.
"""

from __future__ import annotations

import numpy as np

ITERATIONS = 20
SAMPLE = 1000  # documents the rotation is fitted on (the cost is iterations × sample × d²; d=384 is slow on a busy CPU)


def itq_rotation(v: np.ndarray, iterations: int = ITERATIONS, seed: int = 0) -> np.ndarray:
    """The [d, d] rotation R minimising ||sign(vR) - vR||² over the rows of v (centred, reduced vectors)."""
    rng = np.random.default_rng(seed)
    if len(v) > SAMPLE:
        v = v[rng.choice(len(v), SAMPLE, replace=False)]
    v = np.asarray(v, np.float32)
    d = v.shape[1]
    r = np.linalg.qr(rng.standard_normal((d, d)))[0].astype(np.float32)
    for _ in range(iterations):
        b = np.sign(v @ r)
        b[b == 0] = 1
        u, _, wt = np.linalg.svd((v.T @ b).astype(np.float64))  # fix the codes, solve the orthogonal Procrustes problem
        r = (u @ wt).astype(np.float32)
    return r
