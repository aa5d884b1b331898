"""FAISS index kinds and where they run. (Storing them on disk is rag.store, one layer up.)

Kinds (all inner product on L2-normalised vectors, i.e. cosine):
  flat      exact search, 4·d bytes per vector
  ivf-flat  inverted lists over k-means cells, 4·d bytes per vector (+ list ids)
  ivf-pq    inverted lists + product quantisation, m bytes per vector
  hnsw      graph search, 4·d bytes + ~2·M links per vector
  sq8       8-bit scalar quantisation, d bytes per vector
  binary    1 bit per coordinate (d/8 bytes); Hamming candidates rescored with the float query
  opq-pq    OPQ rotation + product quantisation, exhaustive search: about d/4 bytes per vector
  ivf-pq-rerank  inverted lists + 4-bit fast-scan PQ (one dimension per sub-quantiser: d/2 bytes per vector in
            RAM), its top 200 candidates reranked exactly against the float vectors, a memory-mapped vectors.npy
            beside index.faiss (4·d more bytes per vector on disk / in the page cache)

Placement (`placement()`, decided once per process):
  cuda-faiss  faiss sees a GPU: flat/ivf/sq8 indexes move there with faiss.index_cpu_to_all_gpus
  cuda-torch  only torch sees CUDA: flat search is a torch matmul + top-k on the GPU
  cpu         everything else
Every result row and manifest says which was used.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np

from rag.config import RagError, RagWarning, runtime_environment, valid_choice

INDEX_KINDS: dict[str, str] = {
    "flat": "exact search, 4·d bytes per vector",
    "ivf-flat": "inverted lists over k-means cells, 4·d bytes per vector",
    "ivf-pq": "inverted lists + product quantisation, about d/4 bytes per vector",
    "hnsw": "graph search, 4·d bytes + links per vector",
    "sq8": "8-bit scalar quantisation, d bytes per vector",
    "binary": "1 bit per coordinate (d/8 bytes); Hamming candidates rescored with the float query "
              "(pair it with --reduce itq or distill-itq for better bits)",
    "opq-pq": "OPQ rotation + product quantisation, exhaustive search, about d/4 bytes per vector",
    "ivf-pq-rerank": "inverted lists + 4-bit fast-scan PQ, d/2 bytes per vector in RAM; its top 200 candidates "
                     "reranked exactly against the float vectors, memory-mapped from disk (4·d more bytes per vector "
                     "on disk)",
}
RERANK_KIND = "ivf-pq-rerank"
RERANK_FILE = "vectors.npy"  # ivf-pq-rerank: the float vectors it reranks with, stored beside index.faiss
RERANK_DEPTH = 200  # ivf-pq-rerank: candidates reranked per query (at least k)
GPU_KINDS = ("flat", "ivf-flat", "ivf-pq", "sq8")  # kinds faiss can move to a GPU


def import_faiss():
    """faiss, imported after the runtime environment is set (its OpenMP pool reads OMP_WAIT_POLICY once)."""
    runtime_environment()
    import faiss

    return faiss


def choose_placement(faiss_gpus: int, torch_cuda: bool) -> str:
    """The placement rule, as a pure function (tests run every branch on a CPU)."""
    if faiss_gpus > 0:
        return "cuda-faiss"
    return "cuda-torch" if torch_cuda else "cpu"


@lru_cache(maxsize=1)
def placement() -> str:
    """Where search runs on this machine: 'cuda-faiss', 'cuda-torch' or 'cpu' (see the module docstring)."""
    faiss = import_faiss()
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    return choose_placement(gpus, gpus == 0 and torch_sees_cuda())


def torch_sees_cuda() -> bool:
    """torch.cuda.is_available(), without importing torch (seconds of a cold start) where no NVIDIA driver is
    loaded and nothing imported torch yet: the ONNX query path stays torch-free."""
    if "torch" not in sys.modules and not os.path.exists("/proc/driver/nvidia"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# ---------------------------------------------------------------- in-memory indexes

def ivf_lists(n: int) -> int:
    """About 4·√n lists, but at least 39 training points per list (FAISS's own minimum)."""
    return max(1, min(int(4 * math.sqrt(n)), n // 39))


TRAIN_PER_LIST = 40  # at scale, IVF/PQ train on 40 vectors per list (faiss's minimum is 39), lists sized for all n


def ivf_train_size(n: int) -> int:
    """How many of n vectors an IVF kind trains on at scale (bench scale, Ray shards, the streaming build)."""
    return min(n, TRAIN_PER_LIST * ivf_lists(n))


def pq_shape(d: int, n: int) -> tuple[int, int]:
    """(m sub-quantisers, bits each): about 4 dimensions per sub-quantiser, fewer bits on tiny corpora."""
    m = max(k for k in range(1, d + 1) if d % k == 0 and k <= max(1, d // 4))
    bits = 8 if n >= 256 * 39 // 4 else max(1, min(8, int(math.log2(max(2, n // 4)))))
    return m, bits


def code_bytes(kind: str, d: int, n: int) -> int:
    """Bytes that one more vector adds to an index of `kind` (its code, plus a list id for IVF kinds); the fixed
    tables (codebooks, rotations, centroids) are left out: on small corpora they outweigh the codes."""
    pq = pq_shape(d, n)
    per = {"flat": 4 * d, "ivf-flat": 4 * d + 8, "ivf-pq": math.ceil(pq[0] * pq[1] / 8) + 8, "hnsw": 4 * d + 8 * 32,
           "sq8": d, "binary": math.ceil(d / 8), "opq-pq": math.ceil(pq[0] * pq[1] / 8),
           RERANK_KIND: math.ceil(d / 2) + 8}  # its 4·d float bytes per vector stay on disk (SearchIndex.floats)
    return per[kind]


class SearchIndex:
    """One FAISS index (or a torch matrix on CUDA) with a uniform search()."""

    def __init__(self, kind: str, index, dim: int, device: str, binary_rescore: int = 0, floats=None,
                 rerank_depth: int = RERANK_DEPTH):
        self.kind, self.index, self.dim, self.device = kind, index, dim, device
        self.binary_rescore = binary_rescore  # binary: how many Hamming candidates to rescore
        self.floats = floats  # ivf-pq-rerank: the float vectors [n, d] (a memmap once read from disk)
        self.rerank_depth = rerank_depth  # ivf-pq-rerank: how many candidates to rerank
        self._torch_matrix = None
        self._codes = None  # binary: the packed document codes, read once

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (scores, row numbers) for each query; rows are -1 where fewer than k exist."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, len(self))
        if self.kind == "binary":
            return self._search_binary(queries, k)
        if self.kind == RERANK_KIND:
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
        if self.kind == "binary":
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
        """Move to the GPU when one is present (faiss's own GPU wrappers, else a torch matrix for flat)."""
        where = where or placement()
        if where == "cuda-faiss" and self.kind in GPU_KINDS:
            self.index = import_faiss().index_cpu_to_all_gpus(self.index)
            self.device = where
        elif where == "cuda-torch" and self.kind == "flat":
            import torch

            xb = import_faiss().rev_swig_ptr(self.index.get_xb(), self.index.ntotal * self.dim)
            matrix = torch.from_numpy(np.array(xb).reshape(-1, self.dim))
            self._torch_matrix = matrix.to(torch.device("cuda"))
            self.device = where
        return self

    @classmethod
    def read(cls, kind: str, path: Path, dim: int, binary_rescore: int = 0) -> "SearchIndex":
        """Read an index file with faiss.read_index (no extra copy of the bytes in Python)."""
        faiss = import_faiss()
        index = faiss.read_index_binary(str(path)) if kind == "binary" else faiss.read_index(str(path))
        set_search_params(kind, index)
        # ivf-pq-rerank: the floats stay on disk, paged in as candidates are reranked
        floats = np.load(Path(path).parent / RERANK_FILE, mmap_mode="r") if kind == RERANK_KIND else None
        return cls(kind, index, dim, "cpu", binary_rescore, floats=floats).to_device()


def rerank_exact(floats, queries: np.ndarray, cand: np.ndarray, k: int, chunk: int = 256):
    """(scores, rows): each query's top-k candidate rows by exact inner product with their float vectors (a memmap:
    one sorted read of the distinct candidates per chunk of queries). Rows of -1 stay last, as faiss pads them."""
    scores = np.full((len(queries), k), -np.finfo(np.float32).max, np.float32)
    rows = np.full((len(queries), k), -1, np.int64)
    for lo in range(0, len(queries), chunk):
        c, q = cand[lo:lo + chunk], queries[lo:lo + chunk]
        ids = np.where(c < 0, 0, c)
        uniq = np.unique(ids)
        vectors = np.asarray(floats[uniq], dtype=np.float32)
        s = np.einsum("qrd,qd->qr", vectors[np.searchsorted(uniq, ids)], q)
        s[c < 0] = -np.inf
        top = np.argsort(-s, axis=1, kind="stable")[:, :k]
        top_s, top_r = np.take_along_axis(s, top, 1), np.take_along_axis(c, top, 1)
        found = top_r >= 0
        scores[lo:lo + chunk][found], rows[lo:lo + chunk][found] = top_s[found], top_r[found]
    return scores, rows


def pack_bits(x: np.ndarray, padded_dim: int) -> np.ndarray:
    bits = np.zeros((len(x), padded_dim), np.uint8)
    bits[:, : x.shape[1]] = x > 0
    return np.packbits(bits, axis=1, bitorder="little")


def opq_pq(faiss, x: np.ndarray):
    """OPQ rotation + PQ (exhaustive asymmetric search), trained and filled. Quiet on small corpora: k-means
    asks for 39 points per centroid and would warn at every OPQ iteration; 8 per centroid is enough here."""
    n, d = x.shape
    m, bits = pq_shape(d, n)
    if n <= d:  # faiss's OPQ training crashes with no more vectors than dimensions: plain PQ then
        index = faiss.IndexPQ(d, m, bits, faiss.METRIC_INNER_PRODUCT)
        index.pq.cp.min_points_per_centroid = 8
        index.train(x)
        index.add(x)
        return index
    train_pq = faiss.ProductQuantizer(d, m, bits)
    train_pq.cp.min_points_per_centroid = 8
    opq = faiss.OPQMatrix(d, m)
    opq.niter = 8
    opq.pq = train_pq
    index = faiss.IndexPQ(d, m, bits, faiss.METRIC_INNER_PRODUCT)
    index.pq.cp.min_points_per_centroid = 8
    wrapped = faiss.IndexPreTransform(opq, index)
    wrapped.train(x)
    wrapped.add(x)
    opq.pq = None  # train_pq is freed with this function; the clone below owns all it needs
    return faiss.clone_index(wrapped)


def set_search_params(kind: str, index) -> None:
    if kind in ("ivf-flat", "ivf-pq", RERANK_KIND):
        index.nprobe = min(index.nlist, max(8, index.nlist // 8))
    elif kind == "hnsw":
        index.hnsw.efSearch = 128


MIN_POINTS_PER_CENTROID = 39  # what faiss's k-means asks for before it warns


def few_training_points(index, n_train: int, kind: str = "ivf-pq") -> None:
    """PQ codebooks of 2**bits centroids want 39 training points each. With fewer, faiss prints one warning per
    sub-quantizer (dozens of lines); say it once, with what to do, and let faiss train quietly."""
    centroids = 1 << index.pq.nbits
    wanted = MIN_POINTS_PER_CENTROID * centroids
    if n_train >= wanted:
        return
    index.pq.cp.min_points_per_centroid = 1  # the warning only: training itself is unchanged
    warnings.warn(f"{kind} on {n_train:,} vectors: its {centroids} centroids per sub-quantizer want {wanted:,} "
                  "training points; consider flat or hnsw for a corpus this small", RagWarning, stacklevel=3)


def build_index(vectors: np.ndarray, kind: str, seed: int = 0, train_size: int | None = None,
                size_for: int | None = None) -> SearchIndex:
    """Build an index of `kind` over L2-normalised float32 vectors [n, d].

    train_size: train IVF/PQ on a seeded random sample of this many vectors (None: all of them, which faiss's
    k-means subsamples to 256 per list); the lists and codes are sized for all n either way.
    size_for: size the lists and codes for this many vectors instead of n (a streaming build trains on a sample,
    resets the index and adds its vectors in chunks: rag.stream_build).
    """
    faiss = import_faiss()
    valid_choice(kind, INDEX_KINDS, "index kind")
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    n_lists = ivf_lists(size_for or n)
    ip = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "ivf-flat":
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, n_lists, ip)
    elif kind == "ivf-pq":
        m, bits = pq_shape(d, size_for or n)
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, n_lists, m, bits, ip)
    elif kind == RERANK_KIND:  # PQ{d}x4fs: one dimension per 4-bit sub-quantiser, scanned with SIMD
        if size_for is not None:
            raise RagError(f"--index {kind} keeps every float vector beside its codes, which a streaming build does "
                           "not hold; build it without --stream, or use ivf-pq")
        index = faiss.IndexIVFPQFastScan(faiss.IndexFlatIP(d), d, n_lists, d, 4, ip)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, 32, ip)
        index.hnsw.efConstruction = 80
    elif kind == "sq8":
        index = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, ip)
    elif kind == "opq-pq":
        return SearchIndex(kind, opq_pq(faiss, x), d, "cpu").to_device()
    else:  # binary
        padded = 8 * math.ceil(d / 8)
        index = faiss.IndexBinaryFlat(padded)
        index.add(pack_bits(x, padded))
        return SearchIndex(kind, index, d, "cpu", binary_rescore=200).to_device()
    if not index.is_trained:
        if hasattr(index, "cp"):
            index.cp.seed = seed
        sample = x
        if train_size is not None and train_size < n:
            sample = x[np.sort(np.random.default_rng(seed).choice(n, train_size, replace=False))]
        if kind in ("ivf-pq", RERANK_KIND):
            few_training_points(index, len(sample), kind)
        if kind == RERANK_KIND and len(sample) < 16:  # k-means needs a point per 4-bit centroid: repeat them
            sample = np.resize(sample, (16, d))
        index.train(sample)
    index.add(x)
    set_search_params(kind, index)
    return SearchIndex(kind, index, d, "cpu", floats=x if kind == RERANK_KIND else None).to_device()
