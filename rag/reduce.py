"""Reducers bring full-width vectors to any dimension d. Each is fitted on the document vectors only and saved
beside the index, so queries are projected exactly like the documents.

Every reducer is the same arithmetic: centre (optionally), multiply by a [width, d] matrix, L2-normalise.
They differ only in the matrix, and every matrix but truncation's comes from one PCA (`principal_axes`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.config import RagError, valid_choice
from rag.encoders.base import l2_normalize

ABTT_DROP = 3  # principal components that abtt removes (the common direction that pooling piles up)

REDUCERS: dict[str, str] = {
    "pca": "centre, project on the top-d principal components",
    "truncate": "keep the first d coordinates",
    "whiten": "PCA, then divide each component by its standard deviation (removes anisotropy)",
    "abtt": f"all-but-the-top: centre, drop the top {ABTT_DROP} principal components, keep the next d",
}


def principal_axes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, eigenvalues, eigenvectors as columns) of the rows of x, largest eigenvalue first."""
    x = x.astype(np.float64)
    mean = x.mean(0)
    eigval, eigvec = np.linalg.eigh(np.cov(x - mean, rowvar=False))
    order = np.argsort(eigval)[::-1]
    return mean, eigval[order], eigvec[:, order]


class Reducer:
    """Maps full-width vectors to d dimensions and L2-normalises them (see REDUCERS).

    At full width pca and truncate are the identity; whiten still whitens.
    """

    def __init__(self, kind: str, dim: int, mean: np.ndarray | None = None, matrix: np.ndarray | None = None):
        self.kind, self.dim, self.mean, self.matrix = kind, dim, mean, matrix

    @classmethod
    def fit(cls, doc_vectors: np.ndarray, dim: int, kind: str = "pca") -> "Reducer":
        valid_choice(kind, REDUCERS, "reducer")
        width = doc_vectors.shape[1]
        if not 1 <= dim <= width:
            raise RagError(f"--dim {dim} is out of range for this encoder; choose 1..{width}")
        if kind == "truncate" or (kind == "pca" and dim == width):
            return cls(kind, dim)
        mean, eigval, eigvec = principal_axes(doc_vectors)
        start = ABTT_DROP if kind == "abtt" else 0
        matrix = eigvec[:, start:start + dim]  # abtt near full width keeps what is left after the drop
        if kind == "whiten":
            matrix = matrix / np.sqrt(np.maximum(eigval[:dim], 1e-12))
        return cls(kind, matrix.shape[1], mean.astype(np.float32), matrix.astype(np.float32))

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        if self.matrix is None:
            return l2_normalize(x[:, : self.dim])
        return l2_normalize((x - self.mean) @ self.matrix)

    @property
    def input_width(self) -> int | None:
        return None if self.matrix is None else self.matrix.shape[0]

    def save(self, folder: Path) -> None:
        arrays = {"kind": np.array(self.kind), "dim": np.array(self.dim)}
        if self.matrix is not None:
            arrays.update(mean=self.mean, matrix=self.matrix)
        np.savez(Path(folder) / "reducer.npz", **arrays)

    @classmethod
    def load(cls, folder: Path) -> "Reducer":
        z = np.load(Path(folder) / "reducer.npz")
        return cls(str(z["kind"]), int(z["dim"]), z["mean"] if "mean" in z else None, z["matrix"] if "matrix" in z else None)
