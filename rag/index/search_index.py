"""Building and searching one FAISS index of any kind: `build_index` (from the kind's table entry) and
`SearchIndex` (a uniform search(), serialisation, side files, GPU placement)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from rag.config import RagError, RagWarning
from rag.index.kinds import INDEX_TABLE, IndexKind, import_faiss, index_kind, ivf_lists, pq_shape, set_search_params
from rag.index.placement import gpu_placement, placement, warn_cpu_fallback

RERANK_FILE = "vectors.npy"  # ivf-pq-rerank: the float vectors it reranks with, stored beside index.faiss
RERANK_DEPTH = 200  # ivf-pq-rerank: candidates reranked per query (at least k)


class SearchIndex:
    """One FAISS index (or a torch matrix on CUDA) with a uniform search()."""

    def __init__(
        self,
        kind: str,
        index,
        dim: int,
        device: str,
        binary_rescore: int = 0,
        floats=None,
        rerank_depth: int = RERANK_DEPTH,
    ):
        self.kind, self.index, self.dim, self.device = kind, index, dim, device
        self.binary_rescore = binary_rescore  # binary: how many Hamming candidates to rescore
        self.floats = floats  # ivf-pq-rerank: the float vectors [n, d] (a memmap once read from disk)
        self.rerank_depth = rerank_depth  # ivf-pq-rerank: how many candidates to rerank
        self._torch_matrix = None
        self._codes = None  # binary: the packed document codes, read once

    @property
    def entry(self) -> IndexKind:
        return INDEX_TABLE[self.kind]

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (scores, row numbers) for each query; rows are -1 where fewer than k exist."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, len(self))
        if self.entry.binary:
            return self._search_binary(queries, k)
        if self.entry.keeps_floats:
            _, cand = self.index.search(queries, min(len(self), max(k, self.rerank_depth)))
            return rerank_exact(self.floats, queries, cand, k)
        if self._torch_matrix is not None:
            import torch

            q = torch.from_numpy(queries).to(self._torch_matrix.device)
            scores, rows = torch.topk(q @ self._torch_matrix.T, k, dim=1)
            return scores.cpu().numpy(), rows.cpu().numpy()
        return self.index.search(queries, k)

    def _search_binary(self, queries, k):
        faiss = import_faiss()
        codes = pack_bits(queries, self.index.d)
        n_cand = min(len(self), max(k, self.binary_rescore))
        _, cand = self.index.search(codes, n_cand)
        # Rescore: the float query against the ±1 document codes (asymmetric distance, no float docs stored).
        if self._codes is None:
            self._codes = faiss.vector_to_array(self.index.xb).reshape(self.index.ntotal, -1)
        doc_codes = self._codes
        scores = np.empty((len(queries), k), np.float32)
        rows = np.empty((len(queries), k), np.int64)
        for i, (q, c) in enumerate(zip(queries, cand)):
            bits = np.unpackbits(doc_codes[c], axis=1, bitorder="little")[:, : self.dim].astype(np.float32)
            s = (2 * bits - 1) @ q
            top = np.argsort(-s)[:k]
            scores[i], rows[i] = s[top], c[top]
        return scores, rows

    def serialize(self) -> bytes:
        faiss = import_faiss()
        index = self.index
        if self.entry.binary:
            return faiss.serialize_index_binary(index).tobytes()
        if self.device == "cuda-faiss":
            index = faiss.index_gpu_to_cpu(index)
        return faiss.serialize_index(index).tobytes()

    @property
    def side_bytes(self) -> int:
        """Bytes stored beside the FAISS index (ivf-pq-rerank's float vectors), 0 for other kinds."""
        return 0 if self.floats is None else int(self.floats.nbytes)

    @property
    def nbytes(self) -> int:
        """Every stored byte: the serialised index and, for ivf-pq-rerank, its float vectors."""
        return len(self.serialize()) + self.side_bytes

    def write_side_files(self, folder: Path) -> None:
        """Save what the kind keeps beside index.faiss in an index folder (ivf-pq-rerank: RERANK_FILE)."""
        if self.floats is not None:
            np.save(folder / RERANK_FILE, np.ascontiguousarray(self.floats, dtype=np.float32))

    def to_device(self, where: str | None = None) -> "SearchIndex":
        """Move to the GPU where the table allows (gpu_placement): faiss's GPU cloner with the kind's options, or a
        torch matrix for flat where only torch sees CUDA; a kind that stays on the CPU says why, once."""
        where = where or placement()
        device, options, why = gpu_placement(self.kind, self.dim, len(self), where)
        if device == "cuda-faiss":
            faiss = import_faiss()
            co = faiss.GpuMultipleClonerOptions()
            for name, value in options.items():
                setattr(co, name, value)
            self.index = faiss.index_cpu_to_all_gpus(self.index, co)
            self.device = device
        elif device == "cuda-torch":
            import torch

            xb = import_faiss().rev_swig_ptr(self.index.get_xb(), self.index.ntotal * self.dim)
            matrix = torch.from_numpy(np.array(xb).reshape(-1, self.dim))
            self._torch_matrix = matrix.to(torch.device("cuda"))
            self.device = device
        elif why and where == "cuda-faiss":
            warn_cpu_fallback(self.kind, why)
        return self

    @classmethod
    def read(cls, kind: str, path: Path, dim: int, binary_rescore: int = 0) -> "SearchIndex":
        """Read an index file with faiss.read_index (no extra copy of the bytes in Python)."""
        faiss = import_faiss()
        entry = index_kind(kind)
        index = faiss.read_index_binary(str(path)) if entry.binary else faiss.read_index(str(path))
        set_search_params(kind, index)
        # ivf-pq-rerank: the floats stay on disk, paged in as candidates are reranked
        floats = np.load(Path(path).parent / RERANK_FILE, mmap_mode="r") if entry.keeps_floats else None
        return cls(kind, index, dim, "cpu", binary_rescore, floats=floats).to_device()


def rerank_exact(floats, queries: np.ndarray, cand: np.ndarray, k: int, chunk: int = 256):
    """(scores, rows): each query's top-k candidate rows by exact inner product with their float vectors (a memmap:
    one sorted read of the distinct candidates per chunk of queries). Rows of -1 stay last, as faiss pads them."""
    scores = np.full((len(queries), k), -np.finfo(np.float32).max, np.float32)
    rows = np.full((len(queries), k), -1, np.int64)
    for lo in range(0, len(queries), chunk):
        c, q = cand[lo : lo + chunk], queries[lo : lo + chunk]
        ids = np.where(c < 0, 0, c)
        uniq = np.unique(ids)
        vectors = np.asarray(floats[uniq], dtype=np.float32)
        s = np.einsum("qrd,qd->qr", vectors[np.searchsorted(uniq, ids)], q)
        s[c < 0] = -np.inf
        top = np.argsort(-s, axis=1, kind="stable")[:, :k]
        top_s, top_r = np.take_along_axis(s, top, 1), np.take_along_axis(c, top, 1)
        found = top_r >= 0
        scores[lo : lo + chunk][found], rows[lo : lo + chunk][found] = top_s[found], top_r[found]
    return scores, rows


def pack_bits(x: np.ndarray, padded_dim: int) -> np.ndarray:
    bits = np.zeros((len(x), padded_dim), np.uint8)
    bits[:, : x.shape[1]] = x > 0
    return np.packbits(bits, axis=1, bitorder="little")


def opq_pq(faiss, x: np.ndarray):
    """OPQ rotation + PQ (exhaustive asymmetric search), trained and filled. On a corpus too small for its codebooks
    it says so once (few_training_points) instead of faiss's warning at every OPQ iteration."""
    n, d = x.shape
    m, bits = pq_shape(d, n)
    if n <= d:  # faiss's OPQ training crashes with no more vectors than dimensions: plain PQ then
        index = faiss.IndexPQ(d, m, bits, faiss.METRIC_INNER_PRODUCT)
        few_training_points([index.pq], n, "opq-pq")
        index.train(x)
        index.add(x)
        return index
    train_pq = faiss.ProductQuantizer(d, m, bits)
    opq = faiss.OPQMatrix(d, m)
    opq.niter = 8
    opq.pq = train_pq
    index = faiss.IndexPQ(d, m, bits, faiss.METRIC_INNER_PRODUCT)
    few_training_points([train_pq, index.pq], n, "opq-pq")
    wrapped = faiss.IndexPreTransform(opq, index)
    wrapped.train(x)
    wrapped.add(x)
    opq.pq = None  # train_pq is freed with this function; the clone below owns all it needs
    return faiss.clone_index(wrapped)


MIN_POINTS_PER_CENTROID = 39  # what faiss's k-means asks for before it warns


def few_training_points(pqs: list, n_train: int, kind: str) -> None:
    """PQ codebooks of 2**bits centroids want 39 training points each. With fewer, faiss prints one warning per
    sub-quantizer and k-means run (hundreds of lines for OPQ); say it once per index, with what to do, and let faiss
    train quietly (min_points_per_centroid only decides faiss's warning: the training is the same)."""
    centroids = 1 << pqs[0].nbits
    wanted = MIN_POINTS_PER_CENTROID * centroids
    if n_train >= wanted:
        return
    for pq in pqs:
        pq.cp.min_points_per_centroid = 1
    warnings.warn(
        f"{kind} on {n_train:,} vectors: its {centroids} centroids per sub-quantizer want {wanted:,} "
        "training points; consider flat or hnsw for a corpus this small",
        RagWarning,
        stacklevel=3,
    )


def build_index(
    vectors: np.ndarray, kind: str, seed: int = 0, train_size: int | None = None, size_for: int | None = None
) -> SearchIndex:
    """Build an index of `kind` over L2-normalised float32 vectors [n, d].

    train_size: train IVF/PQ on a seeded random sample of this many vectors (None: all of them, which faiss's
    k-means subsamples to 256 per list); the lists and codes are sized for all n either way.
    size_for: size the lists and codes for this many vectors instead of n (a streaming build trains on a sample,
    resets the index and adds its vectors in chunks: rag.index.stream_build).
    """
    faiss = import_faiss()
    entry = index_kind(kind)
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    if entry.keeps_floats and size_for is not None:
        raise RagError(
            f"--index {kind} keeps every float vector beside its codes, which a streaming build does "
            "not hold; build it without --stream, or use ivf-pq"
        )
    if entry.binary:
        padded = 8 * math.ceil(d / 8)
        index = faiss.IndexBinaryFlat(padded)
        index.add(pack_bits(x, padded))
        return SearchIndex(kind, index, d, "cpu", binary_rescore=200).to_device()
    if entry.make is None:  # opq-pq
        return SearchIndex(kind, opq_pq(faiss, x), d, "cpu").to_device()
    index = entry.make(faiss, d, ivf_lists(size_for or n), size_for or n)
    if not index.is_trained:
        if hasattr(index, "cp"):
            index.cp.seed = seed
        sample = x
        if train_size is not None and train_size < n:
            sample = x[np.sort(np.random.default_rng(seed).choice(n, train_size, replace=False))]
        if entry.pq and entry.ivf:
            few_training_points([index.pq], len(sample), kind)
        if entry.keeps_floats and len(sample) < 16:  # k-means needs a point per 4-bit centroid: repeat them
            sample = np.resize(sample, (16, d))
        index.train(sample)
    index.add(x)
    set_search_params(kind, index)
    return SearchIndex(kind, index, d, "cpu", floats=x if entry.keeps_floats else None).to_device()
