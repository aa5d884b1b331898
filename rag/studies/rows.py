"""The evaluation's measured rows: timing helpers, the BM25 reference row and the hybrid rows.

rag.studies.grid runs the grid; this module times single queries and batches the same way for every row.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from rag.config import percentile
from rag.index.kinds import EXACT_KIND
from rag.retrieve import BM25, SPARSE_RETRIEVER, fuse_minmax, zscore_fuse

RUN_DEPTH = 100  # documents retrieved per query (Recall@100 needs 100)
WARMUP = 5
BATCH_REPEATS = 2

BM25_INDEX = "bm25s"  # the index column of BM25 rows


def timed(fn, items, single_thread: bool = False) -> np.ndarray:
    """Milliseconds of fn(item) for each item. single_thread pins OpenMP/BLAS (FAISS, numpy) to one thread:
    one query is too small to share, and on a busy machine thread hand-offs add milliseconds of noise."""
    from threadpoolctl import threadpool_limits

    out = np.empty(len(items))
    with threadpool_limits(1) if single_thread else nullcontext():
        for i, item in enumerate(items):
            t = time.perf_counter()
            fn(item)
            out[i] = (time.perf_counter() - t) * 1e3
    return out


def timing_order(n_queries: int, n_timed: int) -> list[int]:
    """Query positions to time one at a time: n_timed of them, cycling through the queries if there are fewer."""
    return [i % n_queries for i in range(n_timed)]


p = percentile


def exact_top(queries: np.ndarray, docs: np.ndarray, k: int) -> np.ndarray:
    """Row ids of the exact top-k by inner product (what flat search returns)."""
    scores = queries @ docs.T
    k = min(k, docs.shape[0])
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, 1), axis=1)
    return np.take_along_axis(part, order, 1)


def to_run(queries, doc_ids, scores, hits) -> dict[str, dict[str, float]]:
    return {
        q.id: {doc_ids[h]: float(s) for s, h in zip(srow, hrow) if h >= 0}
        for q, srow, hrow in zip(queries, scores, hits)
    }


def bm25_reference(corpus, q_texts, queries, order, tick):
    """Build BM25 fresh (timed), run every query, time single queries; return (row fields, runs, per-query ms)."""
    import tempfile

    tick("BM25", 0, 1)
    t0 = time.perf_counter()
    bm25 = BM25(corpus.passages)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    runs = bm25.search(q_texts, RUN_DEPTH)
    batch_s = time.perf_counter() - t0
    for i in order[:WARMUP]:
        bm25.search([q_texts[i]], 10)
    ms = timed(lambda i: bm25.search([q_texts[i]], RUN_DEPTH), order, single_thread=True)
    with tempfile.TemporaryDirectory() as tmp:
        bm25.model.save(tmp, show_progress=False)
        bm25.tokenizer.save_vocab(tmp)
        nbytes = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
    fields = dict(
        encoder=SPARSE_RETRIEVER,
        reduce="",
        dim="",
        index=BM25_INDEX,
        retriever=SPARSE_RETRIEVER,
        search_ms_p50=p(ms, 50),
        search_ms_p95=p(ms, 95),
        batch_qps=len(queries) / batch_s,
        index_bytes=nbytes,
        bytes_per_vector=nbytes / len(corpus.passages),
        build_s=build_s,
    )
    tick("BM25", 1, 1)
    return fields, runs, ms, batch_s, bm25


def hybrid_row(
    common, dense, bm25_runs, queries, order, dense_ms, bm25_ms, dense_batch_s, bm25_batch_s, weight, score_run
):
    """Fuse dense and BM25 runs; the latency of one hybrid query is dense + BM25 + fusion."""
    t0 = time.perf_counter()
    fused = {q.id: fuse_minmax(dense[q.id], s, weight) for q, s in zip(queries, bm25_runs)}
    fuse_s = time.perf_counter() - t0
    fuse_ms = timed(lambda i: fuse_minmax(dense[queries[i].id], bm25_runs[i], weight), order, single_thread=True)
    total_ms = dense_ms + bm25_ms + fuse_ms
    return common | dict(
        retriever="hybrid",
        **score_run(fused),
        search_ms_p50=p(total_ms, 50),
        search_ms_p95=p(total_ms, 95),
        batch_qps=len(queries) / (dense_batch_s + bm25_batch_s + fuse_s),
    )


def zscore_hybrid_row(common, qv, docs, bm25, q_texts, queries, doc_ids, order, weight, score_run):
    """Z-score fusion over every document; one hybrid query = full dense scores + full BM25 scores + fusion."""

    def one(i):
        fused = zscore_fuse(qv[i : i + 1] @ docs.T, bm25.full_scores([q_texts[i]]), weight)[0]
        return np.argpartition(-fused, 10)[:10]

    t0 = time.perf_counter()
    fused = zscore_fuse(qv @ docs.T, bm25.full_scores(q_texts), weight)
    top = np.argsort(-fused, axis=1)[:, :RUN_DEPTH]
    batch_s = time.perf_counter() - t0
    run = {q.id: {doc_ids[j]: float(fused[i, j]) for j in top[i]} for i, q in enumerate(queries)}
    for i in order[:WARMUP]:
        one(i)
    ms = timed(one, order, single_thread=True)
    return common | dict(
        retriever="hybrid",
        **score_run(run),
        search_ms_p50=p(ms, 50),
        search_ms_p95=p(ms, 95),
        batch_qps=len(queries) / batch_s,
    )


# ---------------------------------------------------------------- share kept and paired differences

BOOTSTRAPS = 2000


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, n_boot: int = BOOTSTRAPS, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of a − b over paired queries and its 95% percentile bootstrap interval (queries resampled)."""
    diff = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n_boot, len(diff)))].mean(1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(lo), float(hi)


def add_comparisons(rows: list[dict], per_query: dict[tuple, dict[str, float]], seed: int = 0) -> list[str]:
    """Fill `ndcg@10_share` (nDCG@10 over the encoder's own full-width flat dense nDCG@10) and, for every
    reducer other than PCA, `vs_pca_ndcg@10` with its 95% bootstrap interval: the per-query paired difference
    against PCA at the same d, index kind and retriever. Returns notes."""
    full: dict[str, float] = {}
    for r in rows:
        if r["retriever"] == "dense" and r["index"] == EXACT_KIND and r["reduce"] in ("pca", "truncate"):
            if r["dim"] == max(x["dim"] for x in rows if x["encoder"] == r["encoder"] and x["dim"] != ""):
                full[r["encoder"]] = r["ndcg@10"]
    for r in rows:
        if r["encoder"] in full and full[r["encoder"]] > 0:
            r["ndcg@10_share"] = r["ndcg@10"] / full[r["encoder"]]
        if r["reduce"] in ("pca", "") or r["dim"] == "":
            continue
        mine = per_query.get((r["encoder"], r["reduce"], r["dim"], r["index"], r["retriever"]))
        pca = per_query.get((r["encoder"], "pca", r["dim"], r["index"], r["retriever"]))
        if mine and pca:
            qids = sorted(set(mine) & set(pca))
            diff, lo, hi = paired_bootstrap([mine[q] for q in qids], [pca[q] for q in qids], seed=seed)
            r.update({"vs_pca_ndcg@10": diff, "vs_pca_ci_low": lo, "vs_pca_ci_high": hi})
    if not full:
        return []
    return [
        f"ndcg@10_share = nDCG@10 over the encoder's own full-width flat dense nDCG@10. vs_pca_ndcg@10 = mean "
        f"per-query nDCG@10 difference against PCA at the same d, index kind and retriever, with a 95% "
        f"bootstrap interval ({BOOTSTRAPS} resamples of the queries) in vs_pca_ci_low..vs_pca_ci_high; an "
        "interval that excludes 0 is a difference beyond query-sampling noise."
    ]


def is_exact(row: dict) -> bool:
    """A row of exact search: the exact index kind, or BM25 (bm25s scores every passage)."""
    return row["index"] in (EXACT_KIND, BM25_INDEX)


# ---------------------------------------------------------------- selecting rows


def curves(rows, retriever="dense", index=EXACT_KIND) -> dict[tuple[str, str], list[dict]]:
    """(encoder, reduce) -> rows sorted by d, for one retriever and index kind."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r["retriever"] == retriever and r["index"] == index and r["dim"] != "":
            out.setdefault((r["encoder"], r["reduce"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["dim"]) for k, v in out.items()}


def bm25_row(rows):
    return next((r for r in rows if r["retriever"] == SPARSE_RETRIEVER), None)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points (cost, quality) that no other point beats on both (lower cost, higher quality)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


# ---------------------------------------------------------------- sentences from numbers
