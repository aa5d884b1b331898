"""Variants tried by the retrieval evaluation beside rag.encoders' own encoders and reducers.

Encoder `smollm2-input-wbm25`: SmolLM2's input-embedding table, whitened at the token level (the table rows are
centred and decorrelated under the corpus's token frequencies, with shrinkage), then pooled with BM25 weights
(saturated term frequency × IDF for documents, term frequency × IDF for queries). Its statistics are fitted on
the documents (`fit`), cached with the embeddings and saved beside each index, like the IDF encoder's.

Extra reducer `abtt` ("all-but-the-top"): centre, drop the top principal component(s), keep the next d.
Each reducer is a rag.encoders.Reducer (centre, project with a matrix, L2-normalise), so queries and documents
are transformed the same way.
"""
from __future__ import annotations

import numpy as np

from rag.encoders import REDUCERS, Reducer, TableEncoder, register_encoder

ABTT_DROP = 3  # principal components that abtt removes (the common direction that pooling piles up)
EXTRA_REDUCERS = {"abtt": f"centre, drop the top {ABTT_DROP} principal components, keep the next d"}


def all_reducers() -> tuple[str, ...]:
    return tuple(REDUCERS) + tuple(EXTRA_REDUCERS)


def fit_reducer(kind: str, doc_vectors: np.ndarray, dim: int) -> Reducer:
    """Fit reducer `kind` on the documents' full-width vectors, to d = dim."""
    if kind in REDUCERS:
        return Reducer.fit(doc_vectors, dim, kind)
    if kind == "abtt":
        x = doc_vectors.astype(np.float64)
        mean = x.mean(0)
        eigval, eigvec = np.linalg.eigh(np.cov(x - mean, rowvar=False))
        order = np.argsort(eigval)[::-1]
        keep = order[ABTT_DROP:ABTT_DROP + dim]
        return Reducer("abtt", len(keep), mean.astype(np.float32), eigvec[:, keep].astype(np.float32))
    from rag.config import RagError

    raise RagError(f"unknown reducer '{kind}'; valid reducers: {', '.join(all_reducers())}")


class WhitenedBM25TableEncoder(TableEncoder):
    """Token-whitened input-embedding table, BM25-weighted pooling (see the module docstring)."""

    def __init__(self, name, tokenizer, table, shrink: float = 0.1, k1: float = 1.2, b: float = 0.75):
        super().__init__(name, tokenizer, table, pooling="idf")
        self.shrink, self.k1, self.b = shrink, k1, b
        self.state: dict[str, np.ndarray] = {}
        self.table_w: np.ndarray | None = None

    def fit(self, doc_texts: list[str]) -> None:
        ids = self._ids(doc_texts)
        n_vocab = len(self.table)
        df, freq = np.zeros(n_vocab), np.zeros(n_vocab)
        for row in ids:
            u, c = np.unique(np.asarray(row, dtype=np.int64), return_counts=True)
            df[u] += 1
            freq[u] += c
        idf = np.log((len(doc_texts) + 1) / (df + 1)) + 1e-3
        used = np.flatnonzero(freq)
        p = freq[used] / freq[used].sum()
        rows = self.table[used].astype(np.float64)
        mean = p @ rows
        cov = (rows - mean).T @ ((rows - mean) * p[:, None])
        eigval, eigvec = np.linalg.eigh(cov)
        order = np.argsort(eigval)[::-1]
        eigval, eigvec = eigval[order], eigvec[:, order]
        matrix = eigvec / np.sqrt(eigval + self.shrink * eigval.mean())
        avgdl = np.mean([len(r) for r in ids]) if ids else 1.0
        self.set_state({"idf": idf.astype(np.float32), "mean": mean.astype(np.float32),
                        "matrix": matrix.astype(np.float32), "avgdl": np.array(avgdl, np.float32)})

    def get_state(self) -> dict[str, np.ndarray]:
        return dict(self.state)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.state = {k: np.asarray(v) for k, v in state.items()}
        self.idf = self.state["idf"]
        self.table_w = ((self.table - self.state["mean"]) @ self.state["matrix"]).astype(np.float32)

    def encode(self, texts, kind="query", progress=None) -> np.ndarray:
        from rag.config import RagError

        if self.table_w is None:
            raise RagError(f"encoder {self.name} needs corpus statistics; fit it on the documents first "
                           "(embed_corpus does)")
        avgdl = float(self.state["avgdl"])
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, row in enumerate(self._ids(texts)):
            if row:
                u, c = np.unique(np.asarray(row, dtype=np.int64), return_counts=True)
                tf = c.astype(np.float32)
                if kind == "document":
                    tf = tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * len(row) / avgdl))
                w = tf * self.idf[u]
                out[i] = (w @ self.table_w[u]) / max(float(w.sum()), 1e-9)
            if progress and (i % 500 == 0 or i == len(texts) - 1):
                progress(i + 1, len(texts))
        return out


def _wbm25_encoder(name: str) -> WhitenedBM25TableEncoder:
    from rag.smollm2 import load_input_table

    tokenizer, table = load_input_table()
    return WhitenedBM25TableEncoder(name, tokenizer, table)


register_encoder("smollm2-input-wbm25", _wbm25_encoder)


# ---------------------------------------------------------------- fusion variants

FUSIONS = {
    "minmax": "rag.retrieve.fuse_minmax: min-max over each side's top-100 candidates (absent = 0)",
    "zscore": "z-score each side over every document (exact dense cosine and full BM25 scores), then weight",
}


def bm25_full_scores(bm25, texts: list[str]) -> np.ndarray:
    """BM25 scores of every passage for each text [n_texts, n_passages] (bm25s get_scores, same tokenizer)."""
    tokens = bm25.tokenizer.tokenize(texts, update_vocab=False, return_as="string", show_progress=False)
    n = len(bm25.ids)
    out = np.zeros((len(texts), n), np.float32)
    for i, t in enumerate(tokens):
        if t:
            out[i] = bm25.model.get_scores(list(t))
    return out


def zscore_fuse(dense: np.ndarray, sparse: np.ndarray, weight: float) -> np.ndarray:
    """weight·z(dense) + (1-weight)·z(sparse), each z-scored over all documents of its row."""
    def z(x):
        x = np.atleast_2d(x).astype(np.float32)
        return (x - x.mean(1, keepdims=True)) / np.maximum(x.std(1, keepdims=True), 1e-9)

    return weight * z(dense) + (1 - weight) * z(sparse)


def zscore_hybrid_row(common, qv, docs, bm25, q_texts, queries, doc_ids, order, weight, score_run):
    """Z-score fusion over every document; one hybrid query = full dense scores + full BM25 scores + fusion."""
    import time

    from rag.evaluate import RUN_DEPTH, WARMUP, _p, _timed

    def one(i):
        fused = zscore_fuse(qv[i:i + 1] @ docs.T, bm25_full_scores(bm25, [q_texts[i]]), weight)[0]
        return np.argpartition(-fused, 10)[:10]

    t0 = time.perf_counter()
    fused = zscore_fuse(qv @ docs.T, bm25_full_scores(bm25, q_texts), weight)
    top = np.argsort(-fused, axis=1)[:, :RUN_DEPTH]
    batch_s = time.perf_counter() - t0
    run = {q.id: {doc_ids[j]: float(fused[i, j]) for j in top[i]} for i, q in enumerate(queries)}
    for i in order[:WARMUP]:
        one(i)
    ms = _timed(one, order, single_thread=True)
    return common | dict(retriever="hybrid", **score_run(run), search_ms_p50=_p(ms, 50), search_ms_p95=_p(ms, 95),
                         batch_qps=len(queries) / batch_s)
