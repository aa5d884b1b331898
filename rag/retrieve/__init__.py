"""Layer 5, retrieval: dense (encoder → reducer → FAISS), sparse (BM25 via bm25s) and hybrid (score fusion).

- `settings`: `RetrievalSettings` (composes the index's `IndexSpec`) and the retriever and fusion tables.
- `bm25`: BM25 over passages, cached per corpus.  `fusion`: min-max and z-score fusion.
- `retriever`: `Retriever` answers queries with `Hit`s and records per-stage timings in `.timings` (milliseconds).
- `pool`: `open_retriever(settings)`, the one process-wide cache of open retrievers, shared by the agent and the
  service; it reopens an index that was rebuilt on disk.
- `build`: `build_stored`, the one way a stored index and the BM25 cache are built (`rag index build`, the
  service's builds on request, `Retriever.open` on a missing index).
"""

from rag.retrieve.bm25 import BM25
from rag.retrieve.fusion import fuse_minmax, minmax, top_k, zscore_fuse
from rag.retrieve.pool import DEFAULT_POOL, PoolEntry, RetrieverPool, open_retriever
from rag.retrieve.retriever import Hit, Retriever, StageTimer
from rag.retrieve.settings import (
    CANDIDATES,
    DENSE_RETRIEVER,
    FUSED_RETRIEVER,
    FUSIONS,
    HYBRID_WEIGHT,
    MAX_K,
    RETRIEVER_KINDS,
    RETRIEVERS,
    SPARSE_RETRIEVER,
    RetrievalSettings,
    RetrieverKind,
    retriever_kind,
)

__all__ = [
    "BM25",
    "CANDIDATES",
    "DENSE_RETRIEVER",
    "FUSED_RETRIEVER",
    "SPARSE_RETRIEVER",
    "DEFAULT_POOL",
    "FUSIONS",
    "HYBRID_WEIGHT",
    "MAX_K",
    "RETRIEVERS",
    "RETRIEVER_KINDS",
    "Hit",
    "PoolEntry",
    "RetrievalSettings",
    "Retriever",
    "RetrieverKind",
    "RetrieverPool",
    "StageTimer",
    "fuse_minmax",
    "minmax",
    "open_retriever",
    "retriever_kind",
    "top_k",
    "zscore_fuse",
]
