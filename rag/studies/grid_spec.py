"""What a retrieval grid runs and on which data: `GridSpec` (its defaults are the grid's), its checks, and the judged
query set it is scored on (`load_eval_data`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from rag.config import RagError, valid_choice
from rag.encoders import check_backend, check_encoder_name
from rag.index.kinds import INDEX_KINDS
from rag.reduce import REDUCERS
from rag.retrieve import FUSIONS, RETRIEVER_KINDS, RETRIEVERS

DATASETS = ("scifact", "hotpotqa")
DEFAULT_ENCODERS = ("minilm", "smollm2-input", "smollm2-input-wbm25")
DEFAULT_DIMS = (32, 64, 128, 256, 384, 576)
DEFAULT_REDUCERS = ("pca", "truncate", "whiten")
DEFAULT_ANN_REDUCERS = ("pca",)  # approximate index kinds run with these reducers only (flat runs with all)
QUICK = {
    "n_queries": 40,
    "n_extra_docs": 200,
    "encoders": ("minilm",),
    "dims": (32, 128, 384),
    "reducers": ("pca", "truncate"),
    "distill_budget_s": 5.0,
}

Progress = Callable[[str, int, int], None]  # progress(task description, done, total)


@dataclass
class GridSpec:
    dataset: str = "scifact"
    encoders: tuple[str, ...] = DEFAULT_ENCODERS
    dims: tuple[int, ...] = DEFAULT_DIMS
    reducers: tuple[str, ...] = DEFAULT_REDUCERS
    index_kinds: tuple[str, ...] = ()  # () = every kind in rag.index.kinds.INDEX_KINDS
    retrievers: tuple[str, ...] = tuple(RETRIEVERS)
    ann_reducers: tuple[str, ...] = DEFAULT_ANN_REDUCERS  # () = every reducer with every kind
    queries_file: str | None = None
    qrels_file: str | None = None
    quick: bool = False
    timed_queries: int = 100
    hybrid_weight: float = 0.5
    fusion: str = "minmax"  # see rag.retrieve.FUSIONS
    seed: int = 0
    distill_budget_s: float | None = None  # None: rag.reduce's default (the quick grid: QUICK's)
    backend: str | None = None  # how queries are encoded; None = as `rag search` does (the encoder's query default)


@dataclass
class EvalData:
    """The corpus plus the judged query set the grid runs on."""

    corpus: object
    queries: list
    qrels: dict[str, dict[str, int]]
    qrels_check: dict = field(default_factory=dict)


# ---------------------------------------------------------------- validation and data


def check_spec(spec: GridSpec) -> GridSpec:
    """Validate every name in the spec (raising RagError listing the valid names); fill defaults."""
    check_dataset(spec.dataset)
    for e in spec.encoders:
        check_encoder_name(e)
    for r in spec.reducers + spec.ann_reducers:
        valid_choice(r, REDUCERS, "reducer")
    kinds = spec.index_kinds or tuple(INDEX_KINDS)
    for k in kinds:
        valid_choice(k, INDEX_KINDS, "index kind")
    for r in spec.retrievers:
        valid_choice(r, RETRIEVERS, "retriever")
    if not spec.encoders and any(RETRIEVER_KINDS[r].dense for r in spec.retrievers):
        raise RagError("no encoders given; pass --encoders, e.g. --encoders minilm")
    if any(d < 1 for d in spec.dims) or not spec.dims:
        raise RagError(f"--dims must be positive integers, got {list(spec.dims)}")
    if (spec.queries_file is None) != (spec.qrels_file is None) and spec.queries_file is not None:
        raise RagError("--queries needs --qrels with judgments for those queries (BEIR qrels TSV)")
    valid_choice(spec.fusion, FUSIONS, "fusion")
    for e in spec.encoders:
        check_backend(e, spec.backend, queries=True)
    if spec.timed_queries < 1:
        raise RagError("timed_queries must be at least 1")
    spec.index_kinds = tuple(kinds)
    return spec


def check_dataset(name: str) -> str:
    if name in DATASETS or Path(name).expanduser().is_dir():
        return name
    raise RagError(
        f"unknown dataset '{name}'; valid datasets: {', '.join(DATASETS)}, a BEIR-layout folder "
        "(corpus.jsonl, queries.jsonl, qrels/test.tsv), or a folder of documents with --queries and --qrels"
    )


def load_eval_data(spec: GridSpec) -> EvalData:
    """Load the corpus and the judged queries (optionally another query set), drop unknown qrels ids."""
    from rag.data.corpus import load_corpus
    from rag.data.files import load_qrels_file
    from rag.data.judgments import expand_document_qrels, load_queries_file, subset
    from rag.studies.metrics import clean_qrels

    corpus = load_corpus(spec.dataset)
    if spec.quick:
        corpus = subset(corpus, QUICK["n_queries"], QUICK["n_extra_docs"], seed=spec.seed)
    queries, qrels = corpus.queries, corpus.qrels
    if spec.qrels_file:
        qrels = load_qrels_file(spec.qrels_file)
        if spec.queries_file:
            queries = load_queries_file(spec.queries_file)
        elif (Path(corpus.source) / "queries.jsonl").exists():
            queries = load_queries_file(Path(corpus.source) / "queries.jsonl")
    if not qrels:
        raise RagError(f"the query set of '{spec.dataset}' has no qrels at all; pass --qrels FILE.tsv with judgments")
    qrels = expand_document_qrels(qrels, corpus.passages)  # a document path stands for all of its passages
    clean, check = clean_qrels(qrels, [q.id for q in queries], [p.id for p in corpus.passages])
    queries = [q for q in queries if q.id in clean]
    return EvalData(
        corpus,
        queries,
        clean,
        asdict(check)
        | {
            "unknown_query_ids": len(check.unknown_query_ids),
            "unknown_doc_ids": len(check.unknown_doc_ids),
            "examples": (check.unknown_query_ids[:3] + check.unknown_doc_ids[:3]),
        },
    )


# ---------------------------------------------------------------- the grid
