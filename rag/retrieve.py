"""Retrieval: dense (encoder → reducer → FAISS), sparse (BM25 via bm25s) and hybrid (min-max score fusion).

`Retriever.open(...)` loads the corpus, the stored index (building it first if missing) and the encoder once;
`search()` then answers a query with `Hit`s and records per-stage timings in `.timings` (milliseconds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.config import RagError, cache_dir, valid_choice
from rag.corpus import Corpus, Passage, load_corpus

RETRIEVERS = ("dense", "bm25", "hybrid")
HYBRID_WEIGHT = 0.5  # weight of the dense side in min-max fusion; SciFact reference: 0.707 nDCG@10 at 0.5
CANDIDATES = 100  # each side's candidate list before fusion


@dataclass
class Hit:
    passage: Passage
    score: float

    def as_dict(self) -> dict:
        p = self.passage
        return {"id": p.id, "title": p.title, "source": p.source, "score": round(float(self.score), 6), "text": p.text}


class BM25:
    """BM25 over passages (bm25s, English stopwords, title + text), cached per corpus content hash."""

    def __init__(self, passages: list[Passage], cache_key: str | None = None):
        import bm25s
        from bm25s.tokenization import Tokenizer

        self.ids = [p.id for p in passages]
        folder = cache_dir() / "bm25" / cache_key if cache_key else None
        self.tokenizer = Tokenizer(stopwords="en")
        if folder and (folder / "params.index.json").exists():
            self.model = bm25s.BM25.load(folder, show_progress=False)
            self.tokenizer.load_vocab(folder)
            return
        tokens = self.tokenizer.tokenize([f"{p.title} {p.text}" for p in passages], return_as="tuple", show_progress=False)
        self.model = bm25s.BM25()
        self.model.index(tokens, show_progress=False)
        if folder:
            tmp = folder.with_name(folder.name + ".tmp")
            tmp.mkdir(parents=True, exist_ok=True)
            self.model.save(tmp, show_progress=False)
            self.tokenizer.save_vocab(tmp)
            if not folder.exists():
                tmp.rename(folder)

    def search(self, queries: list[str], k: int = CANDIDATES) -> list[dict[str, float]]:
        k = min(k, len(self.ids))
        tokens = self.tokenizer.tokenize(queries, update_vocab=False, return_as="tuple", show_progress=False)
        docs, scores = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [{self.ids[d]: float(s) for d, s in zip(row_d, row_s) if s > 0} for row_d, row_s in zip(docs, scores)]


def _minmax(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {k: (v - lo) / span if span > 0 else 1.0 for k, v in scores.items()}


def fuse_minmax(dense: dict[str, float], sparse: dict[str, float], weight: float = HYBRID_WEIGHT) -> dict[str, float]:
    """Min-max normalise each side over its candidates, then weight·dense + (1-weight)·sparse (absent = 0)."""
    d, s = _minmax(dense), _minmax(sparse)
    return {i: weight * d.get(i, 0.0) + (1 - weight) * s.get(i, 0.0) for i in d.keys() | s.keys()}


def top_k(scores: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: -kv[1])[:k]


@dataclass
class Retriever:
    corpus: Corpus
    mode: str
    passages: list[Passage]
    encoder: object = None
    loaded: object = None  # rag.store.LoadedIndex for dense/hybrid
    bm25: BM25 | None = None
    timings: dict = field(default_factory=dict)

    @classmethod
    def open(cls, corpus: str | Corpus = "builtin", encoder: str = "minilm", dim: int | None = None,
             index: str = "flat", reduce: str = "pca", mode: str = "hybrid", progress=None,
             build_if_missing: bool = True) -> "Retriever":
        from rag.store import IndexMissing, build_and_save, check_options, load_index

        valid_choice(mode, RETRIEVERS, "retriever")
        corpus = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
        dim = check_options(encoder, dim, index, reduce)
        enc = loaded = bm25 = None
        if mode in ("dense", "hybrid"):
            try:
                loaded = load_index(corpus, encoder, dim, index, reduce)
            except IndexMissing:
                if not build_if_missing:
                    raise
                build_and_save(corpus, encoder, dim, index, reduce, progress=progress)
                loaded = load_index(corpus, encoder, dim, index, reduce)
            from rag.encoders import get_encoder, with_state

            enc = with_state(get_encoder(encoder), loaded.encoder_state)  # this corpus's IDF, not a shared one
        if mode in ("bm25", "hybrid"):
            bm25 = BM25(corpus.passages, cache_key=corpus.content_hash[:16])
        passages = loaded.passages if loaded else corpus.passages
        return cls(corpus, mode, passages, enc, loaded, bm25)

    @cached_property
    def _passage_by_id(self) -> dict[str, Passage]:
        return {p.id: p for p in self.passages}

    @property
    def description(self) -> dict:
        m = self.loaded.manifest if self.loaded else {}
        return {"corpus": self.corpus.name, "retriever": self.mode, "encoder": m.get("encoder"), "dim": m.get("dim"),
                "index": m.get("kind"), "reduce": m.get("reduce"), "device": m.get("device", "cpu")}

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.loaded.reducer.transform(self.encoder.encode(queries, kind="query"))

    def rows_to_scores(self, scores: np.ndarray, rows: np.ndarray) -> list[dict[str, float]]:
        return [{self.passages[r].id: float(s) for s, r in zip(srow, rrow) if r >= 0} for srow, rrow in zip(scores, rows)]

    def search_many(self, queries: list[str], k: int = 10) -> list[list[Hit]]:
        """Top-k hits for each query, with timings of each stage for the whole batch."""
        if k < 1:
            raise RagError("k must be at least 1")
        t0 = time.perf_counter()
        timings, dense, dense_raw, sparse = {}, None, None, None
        n_cand = max(k, CANDIDATES) if self.mode == "hybrid" else k
        if self.mode in ("dense", "hybrid"):
            vectors = self.encode_queries(queries)
            t1 = time.perf_counter()
            dense_raw = self.loaded.index.search(vectors, n_cand)
            t2 = time.perf_counter()
            timings.update(encode_ms=(t1 - t0) * 1e3, dense_ms=(t2 - t1) * 1e3)
        if self.mode in ("bm25", "hybrid"):
            t3 = time.perf_counter()
            sparse = self.bm25.search(queries, n_cand)
            timings["bm25_ms"] = (time.perf_counter() - t3) * 1e3
        t4 = time.perf_counter()
        if dense_raw is not None:  # ids are looked up here, so that dense_ms is the FAISS search alone
            dense = self.rows_to_scores(*dense_raw)
        if self.mode == "hybrid":
            fused = [fuse_minmax(d, s) for d, s in zip(dense, sparse)]
        else:
            fused = dense if dense is not None else sparse
        by_id = self.corpus.passage_by_id if self.mode == "bm25" else self._passage_by_id
        results = [[Hit(by_id[i], s) for i, s in top_k(scores, k)] for scores in fused]
        timings["fusion_ms"] = (time.perf_counter() - t4) * 1e3
        timings["total_ms"] = (time.perf_counter() - t0) * 1e3
        self.timings = timings
        return results

    def search(self, query: str, k: int = 10) -> list[Hit]:
        return self.search_many([query], k)[0]
