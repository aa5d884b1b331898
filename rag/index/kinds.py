"""FAISS index kinds: one table, INDEX_TABLE, and the sizes every kind is built with.

Every kind is one entry of INDEX_TABLE (an `IndexKind`): its description, its build function and every property the
rest of the package asks (trained, streamable, shardable, binary, keeps float vectors, GPU support, bytes per
vector). All kinds search by inner product on L2-normalised vectors, i.e. cosine.

Where an index runs is rag.index.placement; building and searching one is rag.index.search_index.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rag.config import runtime_environment, valid_choice

TRAIN_MAX = 200_000  # trained kinds without lists (sq8, opq-pq) train on at most this many rows at scale


@dataclass(frozen=True)
class IndexKind:
    """One index kind and every property the rest of the package asks about it. Adding a kind is one entry here
    plus its build function (`make`: (faiss, d, n_lists, n) -> an empty faiss index)."""

    description: str
    make: Callable | None  # None: built by a kind-specific path in build_index (binary codes, OPQ)
    trained: bool  # learns from the vectors (k-means lists, PQ codebooks, SQ ranges) before vectors are added
    train_rows: str = "none"  # at scale, trains on: "lists" (40 per IVF list), "capped" (TRAIN_MAX rows), "none"
    exhaustive: bool = False  # compares the query with every stored code (no lists or graph): advise's candidates
    scale_grid: bool = True  # in `rag bench scale`'s default grid (the PQ variants are measured by its --pq-sweep)
    exact: bool = False  # exhaustive float search: the exact reference, and a torch matmul where only torch sees CUDA
    binary: bool = False  # stores bit codes in a faiss binary index (d padded to a multiple of 8)
    keeps_floats: bool = False  # stores the float vectors beside index.faiss (RERANK_FILE) and reranks with them
    streamable: bool = True  # the streaming build can train on a sample and add vectors chunk by chunk
    shardable: bool = True  # Ray shards can build it (trained kinds share one quantizer, trained on a sample)
    ivf: bool = False  # has inverted lists: nprobe is set at load time
    pq: bool = False  # product-quantised codes (pq_shape) with few-training-point warnings
    gpu: str = "cpu"  # on a faiss GPU: "faiss" (cloned), "faiss-pq" (IVF-PQ rules, see gpu_placement), "cpu"
    gpu_note: str = ""  # why the kind stays on the CPU where faiss sees a GPU (printed once as a warning)
    slow_build: bool = False  # its build time grows fastest with N (`bench scale --hnsw-max` skips it above a size)
    bytes_per_vector: Callable = lambda d, n: 4 * d  # code bytes one more vector adds (see code_bytes)


def pq_code_bytes(d: int, n: int) -> int:
    m, bits = pq_shape(d, n)
    return math.ceil(m * bits / 8)


INDEX_TABLE: dict[str, IndexKind] = {
    "flat": IndexKind(
        "exact search, 4·d bytes per vector",
        make=lambda faiss, d, lists, n: faiss.IndexFlatIP(d),
        trained=False,
        exhaustive=True,
        exact=True,
        gpu="faiss",
    ),
    "ivf-flat": IndexKind(
        "inverted lists over k-means cells, 4·d bytes per vector",
        make=lambda faiss, d, lists, n: faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, lists, faiss.METRIC_INNER_PRODUCT),
        trained=True,
        train_rows="lists",
        ivf=True,
        gpu="faiss",
        bytes_per_vector=lambda d, n: 4 * d + 8,
    ),
    "ivf-pq": IndexKind(
        "inverted lists + product quantisation, about d/4 bytes per vector",
        make=lambda faiss, d, lists, n: faiss.IndexIVFPQ(
            faiss.IndexFlatIP(d), d, lists, *pq_shape(d, n), faiss.METRIC_INNER_PRODUCT
        ),
        trained=True,
        train_rows="lists",
        ivf=True,
        pq=True,
        gpu="faiss-pq",
        bytes_per_vector=lambda d, n: pq_code_bytes(d, n) + 8,
    ),
    "hnsw": IndexKind(
        "graph search, 4·d bytes + links per vector",
        make=lambda faiss, d, lists, n: hnsw_flat(faiss, d),
        trained=False,
        slow_build=True,
        gpu_note="faiss has no GPU HNSW",
        bytes_per_vector=lambda d, n: 4 * d + 8 * 32,
    ),
    "sq8": IndexKind(
        "8-bit scalar quantisation, d bytes per vector",
        make=lambda faiss, d, lists, n: faiss.IndexScalarQuantizer(
            d, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        ),
        trained=True,
        exhaustive=True,
        train_rows="capped",
        gpu_note="faiss's GPU cloner does not implement the flat IndexScalarQuantizer",
        bytes_per_vector=lambda d, n: d,
    ),
    "binary": IndexKind(
        "1 bit per coordinate (d/8 bytes); Hamming candidates rescored with the float query "
        "(pair it with --reduce itq or distill-itq for better bits)",
        make=None,
        trained=False,
        exhaustive=True,
        binary=True,
        gpu_note="binary codes are searched on the CPU",
        bytes_per_vector=lambda d, n: math.ceil(d / 8),
    ),
    "opq-pq": IndexKind(
        "OPQ rotation + product quantisation, exhaustive search, about d/4 bytes per vector",
        make=None,
        trained=True,
        exhaustive=True,
        scale_grid=False,
        train_rows="capped",
        pq=True,
        gpu_note="faiss's GPU cloner does not implement IndexPQ behind an OPQ transform",
        bytes_per_vector=pq_code_bytes,
    ),
    "ivf-pq-rerank": IndexKind(
        "inverted lists + 4-bit fast-scan PQ, d/2 bytes per vector in RAM; its top 200 candidates "
        "reranked exactly against the float vectors, memory-mapped from disk (4·d more bytes per vector on disk)",
        # PQ{d}x4fs: one dimension per 4-bit sub-quantiser, scanned with SIMD
        make=lambda faiss, d, lists, n: faiss.IndexIVFPQFastScan(
            faiss.IndexFlatIP(d), d, lists, d, 4, faiss.METRIC_INNER_PRODUCT
        ),
        trained=True,
        scale_grid=False,
        train_rows="lists",
        keeps_floats=True,
        streamable=False,
        shardable=False,
        ivf=True,
        pq=True,
        gpu_note="faiss has no GPU fast-scan PQ",
        bytes_per_vector=lambda d, n: math.ceil(d / 2) + 8,  # its 4·d float bytes per vector stay on disk
    ),
}
INDEX_KINDS: dict[str, str] = {name: kind.description for name, kind in INDEX_TABLE.items()}
EXACT_KIND = next(name for name, kind in INDEX_TABLE.items() if kind.exact)  # the exact reference of every study


def index_kind(name: str) -> IndexKind:
    """The table entry of an index kind, or a RagError listing the valid ones."""
    return INDEX_TABLE[valid_choice(name, INDEX_KINDS, "index kind")]


def hnsw_flat(faiss, d: int):
    index = faiss.IndexHNSWFlat(d, 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80
    return index


def import_faiss():
    """faiss, imported after the runtime environment is set (its OpenMP pool reads OMP_WAIT_POLICY once)."""
    runtime_environment()
    import faiss

    return faiss


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
    return index_kind(kind).bytes_per_vector(d, n)


def train_rows(kind: str, n: int) -> int:
    """How many of n vectors a kind trains on at scale (the streaming build, Ray shards); 0 for untrained kinds."""
    rule = index_kind(kind).train_rows
    return {"lists": ivf_train_size(n), "capped": min(n, TRAIN_MAX), "none": 0}[rule]


def set_search_params(kind: str, index) -> None:
    if index_kind(kind).ivf:
        index.nprobe = min(index.nlist, max(8, index.nlist // 8))
    elif hasattr(index, "hnsw"):
        index.hnsw.efSearch = 128
