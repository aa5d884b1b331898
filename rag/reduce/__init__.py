"""Reducers bring full-width vectors to any dimension d. Each is fitted on the document vectors only and saved
beside the index, so queries are projected exactly like the documents.

Every reducer is the same arithmetic: centre (optionally), multiply by a [width, d] matrix, L2-normalise.
They differ only in the matrix: truncation keeps coordinates; pca, whiten and abtt come from one PCA
(`principal_axes`); distill learns the matrix from the corpus's own pseudo-queries (rag.reduce.distill,
starting from PCA); the -itq kinds add an ITQ rotation (rag.reduce.itq), which only binary codes notice.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.config import RagError, RagWarning, valid_choice
from rag.encoders.base import l2_normalize

ABTT_DROP = 3  # principal components that abtt removes (the common direction that pooling piles up)
DISTILL_BUDGET_S = 40.0  # time budget of one distill fit on 5k documents or more (the fit stays under a minute)


def distill_budget(n_docs: int) -> float:
    """Seconds for one distill fit: from 5 s for a handful of documents up to DISTILL_BUDGET_S at 5,000."""
    return min(DISTILL_BUDGET_S, 5.0 + (DISTILL_BUDGET_S - 5.0) * n_docs / 5000)


@dataclass(frozen=True)
class ReducerKind:
    """One reducer name and what the rest of the package asks about it."""

    description: str
    needs_queries: bool = False  # trained on the corpus's pseudo-queries (rag.reduce.pseudo): not streamable
    rotates: str | None = None  # an ITQ rotation on top of this reducer (its float scores equal that reducer's)
    rotated: str | None = None  # the reducer that adds an ITQ rotation on top of this one (for binary codes)


REDUCER_TABLE: dict[str, ReducerKind] = {
    "pca": ReducerKind("centre, project on the top-d principal components", rotated="itq"),
    "truncate": ReducerKind("keep the first d coordinates"),
    "whiten": ReducerKind("PCA, then divide each component by its standard deviation (removes anisotropy)"),
    "abtt": ReducerKind(f"all-but-the-top: centre, drop the top {ABTT_DROP} principal components, keep the next d"),
    "distill": ReducerKind(
        "a linear map learned without labels to keep each pseudo-query's full-width nearest documents "
        "(starts from PCA; falls back to PCA if it does not beat it on held-out pseudo-queries)",
        needs_queries=True,
        rotated="distill-itq",
    ),
    "itq": ReducerKind(
        "PCA, then an ITQ rotation: the same float scores as pca, better sign bits for the binary index",
        rotates="pca",
    ),
    "distill-itq": ReducerKind(
        "distill, then an ITQ rotation (better sign bits for the binary index)", needs_queries=True, rotates="distill"
    ),
}
REDUCERS: dict[str, str] = {name: kind.description for name, kind in REDUCER_TABLE.items()}
NEEDS_QUERIES = tuple(name for name, kind in REDUCER_TABLE.items() if kind.needs_queries)


def reducer_kind(name: str) -> ReducerKind:
    """The table entry of a reducer name, or a RagError listing the valid ones."""
    return REDUCER_TABLE[valid_choice(name, REDUCERS, "reducer")]


MIN_FIT_DOCUMENTS = 2  # the fewest passages a reducer that centres and fits axes can be fitted on


class ReducerWarning(RagWarning):
    """A learned reducer did not beat PCA and fell back to it, or too few passages to fit one fell back to truncate."""


def principal_axes(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, eigenvalues, eigenvectors as columns) of the rows of x, largest eigenvalue first."""
    x = x.astype(np.float64)
    mean = x.mean(0)
    eigval, eigvec = np.linalg.eigh(np.cov(x - mean, rowvar=False))
    order = np.argsort(eigval)[::-1]
    return mean, eigval[order], eigvec[:, order]


class Reducer:
    """Maps full-width vectors to d dimensions and L2-normalises them (see REDUCERS).

    At full width pca and truncate are the identity; whiten still whitens. `fit_info` holds what a learned
    fit measured (steps, seconds, held-out top-10 overlap against PCA's, whether it fell back to PCA).
    """

    def __init__(
        self,
        kind: str,
        dim: int,
        mean: np.ndarray | None = None,
        matrix: np.ndarray | None = None,
        fit_info: dict | None = None,
    ):
        self.kind, self.dim, self.mean, self.matrix = kind, dim, mean, matrix
        self.fit_info = fit_info or {}

    @classmethod
    def fit(
        cls,
        doc_vectors: np.ndarray,
        dim: int,
        kind: str = "pca",
        queries: np.ndarray | None = None,
        progress=None,
        budget_s: float | None = None,
        seed: int = 0,
    ) -> "Reducer":
        """Fit on the documents; `queries` (pseudo-query vectors) train distill, `progress(done, total)` shows it."""
        entry = reducer_kind(kind)
        width = doc_vectors.shape[1]
        if not 1 <= dim <= width:
            raise RagError(f"--dim {dim} is out of range for this encoder; choose 1..{width}")
        if kind == "truncate" or (kind == "pca" and dim == width):
            return cls(kind, dim)
        if len(doc_vectors) < MIN_FIT_DOCUMENTS:  # no axis can be fitted: one centred vector is zero
            warnings.warn(
                f"{len(doc_vectors)} passage(s) cannot fit {kind}'s axes (it needs {MIN_FIT_DOCUMENTS}); "
                f"the first {dim} dimensions are kept (truncate) until the folder has more",
                ReducerWarning,
                stacklevel=2,
            )
            return cls(kind, dim, fit_info={"fell_back": "truncate", "documents": len(doc_vectors)})
        mean, eigval, eigvec = principal_axes(doc_vectors)
        start = ABTT_DROP if kind == "abtt" else 0
        matrix = eigvec[:, start : start + dim].astype(np.float32)  # abtt near full width keeps what is left
        mean, info = mean.astype(np.float32), {}
        if kind == "whiten":
            matrix = matrix / np.sqrt(np.maximum(eigval[:dim], 1e-12)).astype(np.float32)
        if entry.needs_queries:
            from rag.reduce.distill import fit_distill

            budget = distill_budget(len(doc_vectors)) if budget_s is None else budget_s
            matrix, info = fit_distill(
                doc_vectors, dim, queries, (mean, matrix), budget_s=budget, seed=seed, progress=progress
            )
            if info["fell_back"]:
                warnings.warn(fallback_message(info, dim), ReducerWarning, stacklevel=2)
        reducer = cls(kind, matrix.shape[1], mean, matrix.astype(np.float32), info)
        return reducer.with_itq(doc_vectors, kind, seed) if entry.rotates else reducer

    def with_itq(self, doc_vectors: np.ndarray, kind: str, seed: int = 0) -> "Reducer":
        """This reducer followed by an ITQ rotation fitted on its reduced documents, named `kind`."""
        from rag.reduce.itq import itq_rotation

        mean = np.zeros(doc_vectors.shape[1], np.float32) if self.mean is None else self.mean
        matrix = np.eye(doc_vectors.shape[1], self.dim, dtype=np.float32) if self.matrix is None else self.matrix
        rotation = itq_rotation(self.transform(doc_vectors), seed=seed)
        return Reducer(kind, self.dim, mean, (matrix @ rotation).astype(np.float32), dict(self.fit_info))

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        if self.matrix is None:
            return l2_normalize(x[:, : self.dim])
        return l2_normalize((x - self.mean) @ self.matrix)

    @property
    def input_width(self) -> int | None:
        return None if self.matrix is None else self.matrix.shape[0]

    def save(self, folder: Path) -> None:
        arrays = {
            "kind": np.array(self.kind),
            "dim": np.array(self.dim),
            "fit_info": np.array(json.dumps(self.fit_info)),
        }
        if self.matrix is not None:
            arrays.update(mean=self.mean, matrix=self.matrix)
        np.savez(Path(folder) / "reducer.npz", **arrays)

    @classmethod
    def load(cls, folder: Path) -> "Reducer":
        z = np.load(Path(folder) / "reducer.npz")
        info = json.loads(str(z["fit_info"])) if "fit_info" in z else {}
        return cls(
            str(z["kind"]),
            int(z["dim"]),
            z["mean"] if "mean" in z else None,
            z["matrix"] if "matrix" in z else None,
            info,
        )


def fallback_message(info: dict, dim: int) -> str:
    return (
        f"distill did not beat PCA at d={dim} on {info['held_out_queries']} held-out pseudo-queries "
        f"(top-10 overlap {info['overlap@10']:.3f} vs PCA {info['pca_overlap@10']:.3f}); using PCA's matrix"
    )


def fit_for_corpus(
    corpus,
    encoder,
    doc_vectors: np.ndarray,
    dim: int,
    kind: str,
    state: dict | None = None,
    progress=None,
    seed: int = 0,
) -> Reducer:
    """Reducer.fit, with the corpus's pseudo-query vectors when the kind learns from them."""
    queries = None
    if reducer_kind(kind).needs_queries:
        from rag.reduce.pseudo import pseudo_query_vectors

        queries = pseudo_query_vectors(corpus, encoder, state=state, seed=seed)
    return Reducer.fit(doc_vectors, dim, kind, queries=queries, progress=progress, seed=seed)
