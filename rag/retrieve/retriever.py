"""`Retriever`: answers queries with `Hit`s (dense, BM25 or hybrid) and records per-stage timings (milliseconds)."""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np

from rag.config import RagError, RagWarning
from rag.data.corpus import Corpus, Passage, load_corpus
from rag.data.filters import parse_where
from rag.encoders import check_backend, get_encoder
from rag.encoders.cache import with_state
from rag.encoders.probe import PROBE_MIN_COSINE, BackendDisagrees
from rag.index.store import IndexMissing, load_index
from rag.index.update import refresh_if_changed
from rag.retrieve.bm25 import BM25
from rag.retrieve.build import DENSE_PART, build_stored
from rag.retrieve.fusion import fuse_minmax, top_k, zscore_fuse
from rag.retrieve.settings import CANDIDATES, RetrievalSettings


@dataclass
class Hit:
    passage: Passage
    score: float

    def as_dict(self) -> dict:  # id, title, source, text, the passage's metadata where it has some, and the score
        return {**self.passage.as_dict(), "score": round(float(self.score), 6)}


def query_encoder(encoder_name: str, backend: str | None, state: dict):
    """The encoder that queries go through, as `rag search` runs it: the query backend (None = the encoder's query
    default, int8 ONNX for MiniLM) with the corpus's own fitted state (IDF weights). The evaluation grid uses the
    same function, so its quality and encode_ms describe the path users run."""
    return with_state(get_encoder(encoder_name, check_backend(encoder_name, backend, queries=True)), state)


class StageTimer:
    """Wall time of each named stage of one search, in milliseconds; `total_ms` counts from the timer's start."""

    def __init__(self):
        self.start = time.perf_counter()
        self.ms: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t) * 1e3

    def done(self) -> dict[str, float]:
        return {**self.ms, "total_ms": (time.perf_counter() - self.start) * 1e3}


def load_index_for_queries(corpus: Corpus, spec, settings: RetrievalSettings, chosen: bool):
    """(the stored index, the settings its queries run with). The default query backend (MiniLM's int8 ONNX) must
    reproduce the index's probe vectors (rag.encoders.probe); int8 kernels round differently by CPU, and on one
    without AVX-512 VNNI a small folder's probe set can fall just under the bar (mean cosine 0.9898 measured on an
    AMD EPYC). Unless the user chose the backend, the queries then run with the one that built the index, with a
    warning, rather than failing."""
    try:
        return load_index(corpus, spec, backend=settings.backend), settings
    except BackendDisagrees as e:
        if chosen:
            raise
        warnings.warn(
            f"{settings.backend} query vectors disagree with the index of {corpus.name} on this CPU (mean cosine "
            f"{e.agreement['mean']:.4f} < {PROBE_MIN_COSINE}); querying with the {e.built} backend it was built "
            f"with (choose one with --backend)",
            RagWarning,
            stacklevel=3,
        )
        settings = replace(settings, backend=e.built)
        return load_index(corpus, spec, backend=e.built), settings


@dataclass
class Retriever:
    corpus: Corpus
    settings: RetrievalSettings
    passages: list[Passage]
    encoder: object = None
    loaded: object = None  # rag.index.store.LoadedIndex for dense/hybrid
    bm25: BM25 | None = None
    timings: dict = field(default_factory=dict)
    passage_by_id: dict = field(default=None, repr=False)  # built once; a per-request copy (RetrieverPool) shares it

    def __post_init__(self):
        if self.passage_by_id is None:
            self.passage_by_id = {p.id: p for p in self.passages}

    @classmethod
    def open(
        cls,
        settings: RetrievalSettings | None = None,
        *,
        corpus: Corpus | None = None,
        progress=None,
        build_missing: bool = True,
        update: bool = True,
    ) -> "Retriever":
        """Load the corpus, the stored index (building it first if missing and allowed) and the encoder once.

        update: a folder corpus whose files changed since its index was built is updated first (only the changed
        passages are encoded; rag.index.update.refresh_if_changed); False refuses the stale index instead."""
        # a backend the user asked for (not one validated() filled in)
        chosen = settings is not None and settings.backend is not None and not settings.backend_by_default
        settings = (settings or RetrievalSettings()).validated()
        corpus = corpus or load_corpus(settings.corpus)
        enc = loaded = bm25 = None
        if settings.kind.dense:
            spec = settings.index_spec
            if update:
                refresh_if_changed(corpus, spec, progress=progress)
            try:
                loaded, settings = load_index_for_queries(corpus, spec, settings, chosen)
            except IndexMissing:
                if not build_missing:
                    raise
                # documents: the encoder's default (fp32) backend; the BM25 side is read (or built) below
                one_stage = (lambda _stage, done, total: progress(done, total)) if progress else None
                build_stored(corpus, spec, (DENSE_PART,), progress=one_stage)
                loaded, settings = load_index_for_queries(corpus, spec, settings, chosen)
            enc = query_encoder(settings.encoder, settings.backend, loaded.encoder_state)  # this corpus's IDF
        if settings.kind.sparse:
            bm25 = BM25.for_corpus(corpus)
        passages = loaded.passages if loaded else corpus.passages
        return cls(corpus, settings, passages, enc, loaded, bm25)

    @property
    def mode(self) -> str:
        return self.settings.retriever

    @property
    def description(self) -> dict:
        """What `rag search --json`, /search and the agent report about the retrieval that ran."""
        m = self.loaded.manifest if self.loaded else {}
        return {
            "corpus": self.corpus.name,
            "retriever": self.mode,
            "encoder": m.get("encoder"),
            "dim": m.get("dim"),
            "index": m.get("kind"),
            "reduce": m.get("reduce"),
            "device": m.get("device", "cpu"),
            "backend": self.settings.backend,
        }

    def result(self, question: str, hits: list[Hit]) -> dict:
        """What `rag search --json` prints and POST /search returns."""
        timings = {key: round(v, 3) for key, v in self.timings.items()}
        return {
            "question": question,
            "passages": [h.as_dict() for h in hits],
            **self.description,
            "timings_ms": timings,
        }

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.loaded.reducer.transform(self.encoder.encode(queries, kind="query"))

    def rows_to_scores(self, scores: np.ndarray, rows: np.ndarray) -> list[dict[str, float]]:
        ids = self.passages
        return [{ids[r].id: float(s) for s, r in zip(srow, rrow) if r >= 0} for srow, rrow in zip(scores, rows)]

    def passage_filter(self):
        """The `where` filter as a predicate on passages, or None when every passage is allowed."""
        return parse_where(self.settings.where)

    def search_many(self, queries: list[str], k: int | None = None) -> list[list[Hit]]:
        """Top-k hits for each query (k defaults to settings.k), with timings of each stage for the whole batch."""
        k = self.settings.k if k is None else k
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise RagError("k must be at least 1")
        timer, keep = StageTimer(), self.passage_filter()
        if self.settings.kind.dense and self.settings.kind.sparse and self.settings.fusion == "zscore":
            results = self.search_zscore(queries, k, timer, keep)
        else:
            results = self.search_candidates(queries, k, timer, keep)
        self.timings = timer.done()
        return results

    def search_candidates(self, queries: list[str], k: int, timer: StageTimer, keep) -> list[list[Hit]]:
        """Each side's top candidates, fused by min-max; with a filter, over-fetch until k allowed passages remain."""
        kind = self.settings.kind
        n_cand = max(k, CANDIDATES) if kind.dense and kind.sparse else k
        by_id = self.passage_by_id if kind.dense else self.corpus.passage_by_id
        while True:
            fused = self.candidates(queries, n_cand, timer)
            if keep:
                fused = [{i: s for i, s in f.items() if keep(by_id[i])} for f in fused]
            if not keep or all(len(f) >= k for f in fused) or n_cand >= len(self.passages):
                break
            n_cand *= 4
        return [[Hit(by_id[i], s) for i, s in top_k(scores, k)] for scores in fused]

    def candidates(self, queries: list[str], n_cand: int, timer: StageTimer) -> list[dict[str, float]]:
        """{passage id: score} of n_cand candidates per query: dense, BM25 or both fused."""
        kind, dense_raw, sparse = self.settings.kind, None, None
        if kind.dense:
            with timer.stage("encode_ms"):
                vectors = self.encode_queries(queries)
            with timer.stage("dense_ms"):
                dense_raw = self.loaded.index.search(vectors, n_cand)
        if kind.sparse:
            with timer.stage("bm25_ms"):
                sparse = self.bm25.search(queries, n_cand)
        if not kind.dense:
            return sparse
        dense = self.rows_to_scores(*dense_raw)  # ids are looked up here, so that dense_ms is the FAISS search alone
        if not kind.sparse:
            return dense
        with timer.stage("fusion_ms"):
            return [fuse_minmax(d, s, self.settings.weight) for d, s in zip(dense, sparse)]

    def search_zscore(self, queries: list[str], k: int, timer: StageTimer, keep) -> list[list[Hit]]:
        """Hybrid with z-score fusion over every document (see FUSIONS)."""
        n = len(self.passages)
        with timer.stage("encode_ms"):
            vectors = self.encode_queries(queries)
        with timer.stage("dense_ms"):
            scores, rows = self.loaded.index.search(vectors, n)
            dense = np.full((len(queries), n), np.nan, np.float32)
            for i, (s, r) in enumerate(zip(scores, rows)):
                dense[i, r[r >= 0]] = s[r >= 0]
            dense = np.where(np.isnan(dense), np.nanmin(dense, axis=1, keepdims=True), dense)
        with timer.stage("bm25_ms"):
            bm25_order = {pid: j for j, pid in enumerate(self.bm25.ids)}
            sparse = self.bm25.full_scores(queries)[:, [bm25_order[p.id] for p in self.passages]]
        with timer.stage("fusion_ms"):
            fused = zscore_fuse(dense, sparse, self.settings.weight)
            if keep:  # the filter, applied to every document's fused score
                fused[:, [j for j, p in enumerate(self.passages) if not keep(p)]] = -np.inf
            top = np.argsort(-fused, axis=1)[:, :k]
        return [
            [Hit(self.passages[j], float(fused[i, j])) for j in row if fused[i, j] > -np.inf]
            for i, row in enumerate(top)
        ]

    def search(self, query: str, k: int | None = None) -> list[Hit]:
        return self.search_many([query], k)[0]
