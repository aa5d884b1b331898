"""Retrieval: dense (encoder → reducer → FAISS), sparse (BM25 via bm25s) and hybrid (score fusion).

- `RetrievalSettings` owns every retrieval choice: its vocabulary, validation and default. The CLI options, the
  HTTP request models, `rag ask --server`, the agent and the evaluations all build and read it.
- `Retriever` answers queries with `Hit`s and records per-stage timings in `.timings` (milliseconds).
- `open_retriever(settings)` is the one process-wide cache of open retrievers (`RetrieverPool`), shared by the
  agent and the service; it reopens an index that was rebuilt on disk.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from rag.config import RagError, cache_dir, valid_choice
from rag.corpus import Corpus, Passage, load_corpus, parse_where
from rag.encoders import check_backend, get_encoder
from rag.encoders.cache import with_state
from rag.store import IndexMissing, build_and_save, check_options, index_name, index_path, load_index
from rag.update import hold_version

RETRIEVERS: dict[str, str] = {
    "dense": "encoder → reducer → FAISS index",
    "bm25": "BM25 over title + text (bm25s, English stopwords)",
    "hybrid": "dense and BM25 fused (the best on SciFact)",
}
FUSIONS: dict[str, str] = {
    "minmax": "min-max over each side's top-100 candidates (absent = 0), then weight·dense + (1-weight)·bm25",
    "zscore": "z-score each side over every document (full dense cosine and full BM25 scores), then weight",
}
HYBRID_WEIGHT = 0.5  # weight of the dense side; SciFact reference: 0.707 nDCG@10 with min-max at 0.5
CANDIDATES = 100  # each side's candidate list before min-max fusion
MAX_K = 100
RETRY_REOPEN_S = 5.0  # after a failed reopen of a rebuilt index, serve the old one this long before retrying


@dataclass(frozen=True)
class RetrievalSettings:
    """Which corpus to search, how, and how many passages to return. `validated()` checks every field."""

    corpus: str = "builtin"
    encoder: str = "minilm"
    dim: int | None = None  # None = the encoder's full width
    index: str = "flat"
    reduce: str = "pca"
    retriever: str = "hybrid"
    k: int = 5
    fusion: str = "minmax"
    weight: float = HYBRID_WEIGHT
    backend: str | None = None  # how the encoder runs (ENCODER_BACKENDS); None = the encoder's default
    where: str | None = None  # a filter on passage metadata, "source=docs/**/*.md" (see rag.corpus.parse_where)

    def validated(self) -> "RetrievalSettings":
        """These settings with d filled in, or a RagError naming the bad field and its valid values."""
        valid_choice(self.retriever, RETRIEVERS, "retriever")
        valid_choice(self.fusion, FUSIONS, "fusion")
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 1 <= self.k <= MAX_K:
            raise RagError(f"k must be an integer from 1 to {MAX_K}, got {self.k!r}")
        if not 0.0 <= float(self.weight) <= 1.0:
            raise RagError(f"the hybrid weight must be between 0 and 1, got {self.weight}")
        if not self.corpus or not str(self.corpus).strip():
            raise RagError("the corpus name is empty; use builtin, scifact, hotpotqa, squad or a folder path")
        parse_where(self.where)
        dense = self.retriever != "bm25"
        dim = check_options(self.encoder, self.dim, self.index, self.reduce, resolve_dim=dense)  # the store's checks
        return replace(self, dim=dim, backend=check_backend(self.encoder, self.backend, queries=True)) if dense else self

    @property
    def pool_key(self) -> tuple:
        """What identifies an open retriever (k, fusion and weight are per-search choices)."""
        if self.retriever == "bm25":
            return (self.corpus, "bm25")
        return (self.corpus, self.encoder, self.dim, self.index, self.reduce, self.retriever, self.backend)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Hit:
    passage: Passage
    score: float

    def as_dict(self) -> dict:  # id, title, source, text, the passage's metadata where it has some, and the score
        return {**self.passage.as_dict(), "score": round(float(self.score), 6)}


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
            tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
            tmp.mkdir(parents=True, exist_ok=True)
            self.model.save(tmp, show_progress=False)
            self.tokenizer.save_vocab(tmp)
            try:
                tmp.rename(folder)
            except OSError:  # another process saved it first
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)

    def search(self, queries: list[str], k: int = CANDIDATES) -> list[dict[str, float]]:
        k = min(k, len(self.ids))
        tokens = self.tokenizer.tokenize(queries, update_vocab=False, return_as="tuple", show_progress=False)
        docs, scores = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [{self.ids[d]: float(s) for d, s in zip(row_d, row_s) if s > 0} for row_d, row_s in zip(docs, scores)]

    def full_scores(self, texts: list[str]) -> np.ndarray:
        """BM25 scores of every passage for each text [n_texts, n_passages] (bm25s get_scores, same tokenizer)."""
        tokens = self.tokenizer.tokenize(texts, update_vocab=False, return_as="string", show_progress=False)
        out = np.zeros((len(texts), len(self.ids)), np.float32)
        for i, t in enumerate(tokens):
            if t:
                out[i] = self.model.get_scores(list(t))
        return out


# ---------------------------------------------------------------- fusion

def minmax(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    span = hi - lo
    return {k: (v - lo) / span if span > 0 else 1.0 for k, v in scores.items()}


def fuse_minmax(dense: dict[str, float], sparse: dict[str, float], weight: float = HYBRID_WEIGHT) -> dict[str, float]:
    """Min-max normalise each side over its candidates, then weight·dense + (1-weight)·sparse (absent = 0)."""
    d, s = minmax(dense), minmax(sparse)
    return {i: weight * d.get(i, 0.0) + (1 - weight) * s.get(i, 0.0) for i in d.keys() | s.keys()}


def zscore_fuse(dense: np.ndarray, sparse: np.ndarray, weight: float) -> np.ndarray:
    """weight·z(dense) + (1-weight)·z(sparse), each z-scored over all documents of its row."""
    def z(x):
        x = np.atleast_2d(x).astype(np.float32)
        return (x - x.mean(1, keepdims=True)) / np.maximum(x.std(1, keepdims=True), 1e-9)

    return weight * z(dense) + (1 - weight) * z(sparse)


def top_k(scores: dict[str, float], k: int) -> list[tuple[str, float]]:
    return sorted(scores.items(), key=lambda kv: -kv[1])[:k]


# ---------------------------------------------------------------- the retriever

@dataclass
class Retriever:
    corpus: Corpus
    settings: RetrievalSettings
    passages: list[Passage]
    encoder: object = None
    loaded: object = None  # rag.store.LoadedIndex for dense/hybrid
    bm25: BM25 | None = None
    timings: dict = field(default_factory=dict)
    passage_by_id: dict = field(default=None, repr=False)  # built once; a per-request copy (RetrieverPool) shares it

    def __post_init__(self):
        if self.passage_by_id is None:
            self.passage_by_id = {p.id: p for p in self.passages}

    @classmethod
    def open(cls, settings: RetrievalSettings | None = None, *, corpus: Corpus | None = None, progress=None,
             build_missing: bool = True) -> "Retriever":
        """Load the corpus, the stored index (building it first if missing and allowed) and the encoder once."""
        settings = (settings or RetrievalSettings()).validated()
        corpus = corpus or load_corpus(settings.corpus)
        enc = loaded = bm25 = None
        if settings.retriever in ("dense", "hybrid"):
            args = (corpus, settings.encoder, settings.dim, settings.index, settings.reduce)
            try:
                loaded = load_index(*args, backend=settings.backend)
            except IndexMissing:
                if not build_missing:
                    raise
                build_and_save(*args, progress=progress)  # documents: the encoder's default (fp32) backend
                loaded = load_index(*args, backend=settings.backend)
            enc = with_state(get_encoder(settings.encoder, settings.backend), loaded.encoder_state)  # this corpus's IDF, not a shared one
        if settings.retriever in ("bm25", "hybrid"):
            bm25 = BM25(corpus.passages, cache_key=corpus.content_hash[:16])
        passages = loaded.passages if loaded else corpus.passages
        return cls(corpus, settings, passages, enc, loaded, bm25)

    @property
    def mode(self) -> str:
        return self.settings.retriever

    @property
    def description(self) -> dict:
        """What `rag search --json`, /search and the agent report about the retrieval that ran."""
        m = self.loaded.manifest if self.loaded else {}
        return {"corpus": self.corpus.name, "retriever": self.mode, "encoder": m.get("encoder"), "dim": m.get("dim"),
                "index": m.get("kind"), "reduce": m.get("reduce"), "device": m.get("device", "cpu"),
                "backend": self.settings.backend}

    def result(self, question: str, hits: list[Hit]) -> dict:
        """What `rag search --json` prints and POST /search returns."""
        return {"question": question, "passages": [h.as_dict() for h in hits], **self.description,
                "timings_ms": {key: round(v, 3) for key, v in self.timings.items()}}

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        return self.loaded.reducer.transform(self.encoder.encode(queries, kind="query"))

    def rows_to_scores(self, scores: np.ndarray, rows: np.ndarray) -> list[dict[str, float]]:
        return [{self.passages[r].id: float(s) for s, r in zip(srow, rrow) if r >= 0} for srow, rrow in zip(scores, rows)]

    def search_many(self, queries: list[str], k: int | None = None) -> list[list[Hit]]:
        """Top-k hits for each query (k defaults to settings.k), with timings of each stage for the whole batch."""
        k = self.settings.k if k is None else k
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise RagError("k must be at least 1")
        if self.mode == "hybrid" and self.settings.fusion == "zscore":
            return self.search_zscore(queries, k)
        t0, keep = time.perf_counter(), parse_where(self.settings.where)
        n_cand = max(k, CANDIDATES) if self.mode == "hybrid" else k
        by_id = self.corpus.passage_by_id if self.mode == "bm25" else self.passage_by_id
        while True:  # with a filter: over-fetch until k allowed passages remain (or every passage was a candidate)
            fused, timings = self.candidates(queries, n_cand, time.perf_counter())
            fused = [{i: s for i, s in f.items() if keep(by_id[i])} for f in fused] if keep else fused
            if not keep or all(len(f) >= k for f in fused) or n_cand >= len(self.passages):
                break
            n_cand *= 4
        results = [[Hit(by_id[i], s) for i, s in top_k(scores, k)] for scores in fused]
        self.timings = {**timings, "total_ms": (time.perf_counter() - t0) * 1e3}
        return results

    def candidates(self, queries: list[str], n_cand: int, t0: float) -> tuple[list[dict[str, float]], dict]:
        """({passage id: score} of n_cand candidates per query, stage timings): dense, BM25 or both fused."""
        timings, dense, dense_raw, sparse = {}, None, None, None
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
            fused = [fuse_minmax(d, s, self.settings.weight) for d, s in zip(dense, sparse)]
        else:
            fused = dense if dense is not None else sparse
        timings["fusion_ms"] = (time.perf_counter() - t4) * 1e3
        return fused, timings

    def search_zscore(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Hybrid with z-score fusion over every document (see FUSIONS)."""
        t0 = time.perf_counter()
        n = len(self.passages)
        scores, rows = self.loaded.index.search(self.encode_queries(queries), n)
        dense = np.full((len(queries), n), np.nan, np.float32)
        for i, (s, r) in enumerate(zip(scores, rows)):
            dense[i, r[r >= 0]] = s[r >= 0]
        dense = np.where(np.isnan(dense), np.nanmin(dense, axis=1, keepdims=True), dense)
        t1 = time.perf_counter()
        bm25_order = {pid: j for j, pid in enumerate(self.bm25.ids)}
        sparse = self.bm25.full_scores(queries)[:, [bm25_order[p.id] for p in self.passages]]
        t2 = time.perf_counter()
        fused = zscore_fuse(dense, sparse, self.settings.weight)
        if keep := parse_where(self.settings.where):  # the filter, applied to every document's fused score
            fused[:, [j for j, p in enumerate(self.passages) if not keep(p)]] = -np.inf
        top = np.argsort(-fused, axis=1)[:, :k]
        results = [[Hit(self.passages[j], float(fused[i, j])) for j in row if fused[i, j] > -np.inf] for i, row in enumerate(top)]
        self.timings = {"dense_ms": (t1 - t0) * 1e3, "bm25_ms": (t2 - t1) * 1e3,
                        "fusion_ms": (time.perf_counter() - t2) * 1e3, "total_ms": (time.perf_counter() - t0) * 1e3}
        return results

    def search(self, query: str, k: int | None = None) -> list[Hit]:
        return self.search_many([query], k)[0]


# ---------------------------------------------------------------- the one cache of open retrievers

@dataclass
class PoolEntry:
    retriever: Retriever
    link: Path | None  # indexes/<corpus>/<name>: the symlink a rebuild flips (None for bm25)
    version: str | None  # the version folder this retriever loaded
    loaded_at: float = field(default_factory=time.time)
    requests: int = 0
    retry_at: float = 0.0  # after a failed reopen, when to try again
    lease: object = None  # the version's reader lock, held while this entry serves it (prune keeps that version)

    def is_current(self) -> bool:
        """True while the index symlink still points at the version this retriever loaded (one readlink)."""
        return self.link is None or os.path.realpath(self.link) == self.version


def index_link(retriever: Retriever) -> tuple[Path | None, str | None]:
    """(the index symlink, the version folder it pointed at when loaded) of a retriever; (None, None) for bm25."""
    if retriever.loaded is None:
        return None, None
    m = retriever.loaded.manifest
    link = index_path(retriever.corpus.safe_name, index_name(m["encoder"], m["dim"], m["kind"], m["reduce"]))
    return link, str(retriever.loaded.path)


class RetrieverPool:
    """Retrievers keyed by settings, opened once and shared; swapped when their index is rebuilt on disk.

    A rebuild writes a new version folder and flips the index symlink atomically. Each get() compares the
    symlink's target with the version the cached retriever loaded; on a change it opens the new version and
    swaps the entry. Searches already running keep the old retriever object (fully in memory), and requests that
    arrive while the new version loads are served by the old one, so every search sees one whole index and none
    waits for the reload. If opening the new version fails, the old one keeps serving and a later get() retries.
    """

    def __init__(self, build_missing: bool = True):
        self.build_missing = build_missing
        self.entries: dict[tuple, PoolEntry] = {}
        self.lock = threading.Lock()
        self.key_locks: dict[tuple, threading.Lock] = {}
        self.opens = self.swaps = self.swap_failures = 0

    def key_lock(self, key: tuple) -> threading.Lock:
        with self.lock:
            return self.key_locks.setdefault(key, threading.Lock())

    def use(self, entry: PoolEntry, settings: RetrievalSettings) -> Retriever:
        with self.lock:
            entry.requests += 1
        r = entry.retriever
        if r.settings == settings:
            return r
        return replace(r, settings=settings, timings={})  # same loaded parts; this request's k, fusion and weight

    def get(self, settings: RetrievalSettings, progress=None, build_missing: bool | None = None) -> Retriever:
        """The current retriever for these settings: opened on first use, reopened after a rebuild on disk."""
        settings = settings.validated()
        build = self.build_missing if build_missing is None else build_missing
        key = settings.pool_key
        entry = self.entries.get(key)
        if entry is not None and (entry.is_current() or time.monotonic() < entry.retry_at):
            return self.use(entry, settings)
        lock = self.key_lock(key)
        if entry is not None and not lock.acquire(blocking=False):
            return self.use(entry, settings)  # another request is opening the new version; the old one serves
        if entry is None:
            lock.acquire()  # first use: wait for the one opener
        try:
            entry = self.entries.get(key)
            if entry is not None and entry.is_current():
                return self.use(entry, settings)
            try:
                retriever = Retriever.open(settings, progress=progress, build_missing=build)
            except RagError:
                if entry is None:
                    raise
                self.swap_failures += 1  # keep serving the whole old index; try again in a few seconds
                entry.retry_at = time.monotonic() + RETRY_REOPEN_S
                return self.use(entry, settings)
            link, version = index_link(retriever)
            self.opens += 1
            self.swaps += entry is not None
            self.entries[key] = new = PoolEntry(retriever, link, version, lease=hold_version(version))
            return self.use(new, settings)
        finally:
            lock.release()

    def loaded(self) -> list[dict]:
        return [{**entry.retriever.description, "version": Path(entry.version).name if entry.version else None,
                 "loaded_at": round(entry.loaded_at, 3), "requests": entry.requests}
                for entry in list(self.entries.values())]


DEFAULT_POOL = RetrieverPool()


def open_retriever(settings: RetrievalSettings | None = None, *, build_missing: bool | None = None, progress=None,
                   pool: RetrieverPool | None = None) -> Retriever:
    """A retriever from the process-wide cache (or `pool`); the CLI, the agent and the service all come here.

    build_missing: build an index that is not on disk yet (None = the pool's own setting)."""
    return (pool or DEFAULT_POOL).get(settings or RetrievalSettings(), progress, build_missing)
