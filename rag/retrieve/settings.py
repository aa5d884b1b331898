"""What a search is: `RetrievalSettings` and the vocabularies it draws on (retrievers, fusions).

`RetrievalSettings` owns every retrieval choice, its validation and its default. The CLI options, the HTTP request
models, `rag ask --server`, the agent and the evaluations all build and read it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from rag.config import RagError, valid_choice
from rag.data.filters import parse_where
from rag.encoders import check_backend
from rag.index.spec import DEFAULT_INDEX, IndexSpec


@dataclass(frozen=True)
class RetrieverKind:
    """One retriever name: what it does and which sides it runs."""

    description: str
    dense: bool  # encodes queries and searches a FAISS index
    sparse: bool  # searches BM25


RETRIEVER_KINDS: dict[str, RetrieverKind] = {
    "dense": RetrieverKind("encoder → reducer → FAISS index", dense=True, sparse=False),
    "bm25": RetrieverKind("BM25 over title + text (bm25s, English stopwords)", dense=False, sparse=True),
    "hybrid": RetrieverKind("dense and BM25 fused (the best on SciFact)", dense=True, sparse=True),
}
RETRIEVERS: dict[str, str] = {name: kind.description for name, kind in RETRIEVER_KINDS.items()}
# the table's names by what they run, for code that needs one of them (the BM25 reference row, bm25 model ids)
DENSE_RETRIEVER = next(n for n, k in RETRIEVER_KINDS.items() if k.dense and not k.sparse)
SPARSE_RETRIEVER = next(n for n, k in RETRIEVER_KINDS.items() if k.sparse and not k.dense)
FUSED_RETRIEVER = next(n for n, k in RETRIEVER_KINDS.items() if k.dense and k.sparse)
FUSIONS: dict[str, str] = {
    "minmax": "min-max over each side's top-100 candidates (absent = 0), then weight·dense + (1-weight)·bm25",
    "zscore": "z-score each side over every document (full dense cosine and full BM25 scores), then weight",
}
HYBRID_WEIGHT = 0.5  # weight of the dense side; SciFact reference: 0.707 nDCG@10 with min-max at 0.5
CANDIDATES = 100  # each side's candidate list before min-max fusion
MAX_K = 100


def retriever_kind(name: str) -> RetrieverKind:
    """The table entry of a retriever name, or a RagError listing the valid ones."""
    return RETRIEVER_KINDS[valid_choice(name, RETRIEVERS, "retriever")]


@dataclass(frozen=True)
class RetrievalSettings:
    """Which corpus to search, how, and how many passages to return. `validated()` checks every field."""

    corpus: str = "builtin"
    encoder: str = DEFAULT_INDEX.encoder
    dim: int | None = DEFAULT_INDEX.dim  # None = the encoder's full width
    index: str = DEFAULT_INDEX.kind
    reduce: str = DEFAULT_INDEX.reduce
    retriever: str = "hybrid"
    k: int = 5
    fusion: str = "minmax"
    weight: float = HYBRID_WEIGHT
    backend: str | None = None  # how the encoder runs (ENCODER_BACKENDS); None = the encoder's default
    where: str | None = None  # a filter on passage metadata, "source=docs/**/*.md" (see rag.data.filters.parse_where)

    @property
    def kind(self) -> RetrieverKind:
        return retriever_kind(self.retriever)

    @property
    def index_spec(self) -> IndexSpec:
        """The index these settings search (its documents encoded with the encoder's default backend)."""
        return IndexSpec(self.encoder, self.dim, self.index, self.reduce)

    def validated(self) -> "RetrievalSettings":
        """These settings with d filled in, or a RagError naming the bad field and its valid values."""
        kind = self.kind
        valid_choice(self.fusion, FUSIONS, "fusion")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= MAX_K:
            raise RagError(f"k must be an integer from 1 to {MAX_K}, got {self.k!r}")
        if not 0.0 <= float(self.weight) <= 1.0:
            raise RagError(f"the hybrid weight must be between 0 and 1, got {self.weight}")
        if not self.corpus or not str(self.corpus).strip():
            raise RagError("the corpus name is empty; use builtin, scifact, hotpotqa, squad or a folder path")
        parse_where(self.where)
        if not kind.dense:
            return self
        dim = self.index_spec.validated().dim
        checked = replace(self, dim=dim, backend=check_backend(self.encoder, self.backend, queries=True))
        if self.backend is None or self.backend_by_default:  # filled in here, not chosen: kept through validated()
            object.__setattr__(checked, "_backend_by_default", True)
        return checked

    @property
    def backend_by_default(self) -> bool:
        """True when validated() filled in the encoder's default query backend (the user chose none): where that
        backend disagrees with an index on this CPU, queries may fall back to the one that built it. Not a field:
        not compared, not sent to a server, lost by replace()."""
        return getattr(self, "_backend_by_default", False)

    @property
    def pool_key(self) -> tuple:
        """What identifies an open retriever (k, fusion and weight are per-search choices)."""
        if not self.kind.dense:
            return (self.corpus, self.retriever)
        return (self.corpus, self.encoder, self.dim, self.index, self.reduce, self.retriever, self.backend)

    def as_dict(self) -> dict:
        return asdict(self)
