"""`rag bench scale`: how an index's costs grow with the number of vectors N, measured on this machine.

For each N (10k, 100k, 1M by default), d (64, 128, 384) and index kind (rag.index.kinds.INDEX_KINDS, built with
rag.index.search_index.build_index so the kinds are the project's own), one cell measures: build seconds, index bytes, peak RSS
of the process that built it, p50/p95 single-query search, batch QPS and recall@10 against exact search.

Vectors: real MiniLM document embeddings from the embedding cache where there are enough of them; beyond that,
synthetic vectors drawn from a Gaussian with the real ones' mean and covariance (shrunk a little towards the
identity when there are few), L2-normalised. Queries are held out from the same distribution (real documents that
are not in the base, or fresh draws). d < 384 is reached with a PCA fitted on the real vectors.

Each cell runs in a fresh spawned process (so peak RSS is that cell's), and every finished cell is appended to
results.json at once, so a killed run keeps what it measured and `--resume` skips it. Memory bandwidth is measured
in the same run; flat search is compared with (bytes scanned per query ÷ bandwidth). Growth exponents are the
slopes of log(cost) against log(N); rag.bench.scale_report draws them and does the on-paper arithmetic for 1e8/1e9.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from rag.config import RagError, atomic_write_text, cache_dir, current_rss_mb, peak_rss_mb, percentile
from rag.index.kinds import EXACT_KIND, INDEX_TABLE, import_faiss, ivf_train_size
from rag.index.search_index import build_index
from rag.reduce import Reducer
from rag.studies.metrics import ann_recall_at_k

DEFAULT_NS = (10_000, 100_000, 1_000_000)
DEFAULT_DIMS = (64, 128, 384)
DEFAULT_KINDS = tuple(name for name, kind in INDEX_TABLE.items() if kind.scale_grid)
HNSW_MAX = 300_000  # hnsw builds above this take over 10 minutes on 2 cores (the issue allows stopping here)
K = 10
METRICS = ("build_s", "index_bytes", "peak_rss_mb", "p50_ms", "p95_ms", "batch_ms_per_query")


# ---------------------------------------------------------------- vectors


def real_pool(encoder: str = "minilm", root: Path | None = None) -> tuple[np.ndarray, list[str]]:
    """Every cached full-width document embedding of `encoder` (duplicates removed) and the cache folders used."""
    folders = sorted((root or cache_dir() / "embeddings").glob(f"*-{encoder}"))
    parts, used = [], []
    for folder in folders:
        path = folder / "vectors.npy"
        if path.exists():
            v = np.load(path)
            if v.ndim == 2 and len(v) and (not parts or v.shape[1] == parts[0].shape[1]):
                parts.append(v.astype(np.float32))
                used.append(folder.name)
    if not parts:
        raise RagError(
            f"no cached {encoder} embeddings under {cache_dir() / 'embeddings'}; "
            "encode a corpus first, e.g.: rag index build --corpus scifact"
        )
    pool = np.concatenate(parts)
    # The same passage cached twice (two subsets, two batch sizes) differs by ~1e-8: one copy of each, or exact
    # search meets ties that make even flat's recall@10 fall below 1.
    _, first = np.unique(np.round(pool, 4), axis=0, return_index=True)
    pool = pool[np.sort(first)]
    return pool[np.random.default_rng(0).permutation(len(pool))], used


class GaussianFit:
    """A Gaussian with the pool's mean and covariance; draws are L2-normalised like the real embeddings."""

    def __init__(self, pool: np.ndarray, shrink: float | None = None):
        d = pool.shape[1]
        self.mean = pool.mean(0)
        cov = np.cov(pool - self.mean, rowvar=False)
        shrink = min(0.5, d / max(1, len(pool))) * 0.5 if shrink is None else shrink
        cov = (1 - shrink) * cov + shrink * np.trace(cov) / d * np.eye(d)
        eigval, eigvec = np.linalg.eigh(cov)
        self.factor = (eigvec * np.sqrt(np.maximum(eigval, 0))).T.astype(np.float32)  # z @ factor ~ N(0, cov)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        x = rng.standard_normal((n, len(self.mean)), dtype=np.float32) @ self.factor + self.mean
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def write_chunked(path: Path, n: int, d: int, make, chunk: int = 100_000) -> Path:
    """Write an [n, d] float32 .npy file chunk by chunk (make(start, stop) -> rows), never holding all of it."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
    for start in range(0, n, chunk):
        out[start : min(n, start + chunk)] = make(start, min(n, start + chunk))
    out.flush()
    del out
    return path


def exact_topk(base: np.ndarray, queries: np.ndarray, k: int, chunk: int = 200_000) -> np.ndarray:
    """Exact inner-product top-k row numbers (the reference every recall is measured against)."""
    best_s = np.full((len(queries), 0), -np.inf, np.float32)
    best_i = np.zeros((len(queries), 0), np.int64)
    for start in range(0, len(base), chunk):
        s = queries @ np.asarray(base[start : start + chunk]).T
        top = np.argpartition(-s, min(k, s.shape[1] - 1), axis=1)[:, :k]
        best_s = np.concatenate([best_s, np.take_along_axis(s, top, 1)], 1)
        best_i = np.concatenate([best_i, top + start], 1)
        keep = np.argsort(-best_s, axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(best_s, keep, 1), np.take_along_axis(best_i, keep, 1)
    return best_i


def prepare(work: Path, pool: np.ndarray, n: int, dims, n_queries: int, seed: int = 0, synthetic: bool = False) -> dict:
    """Write base, queries and exact top-k for N=n at every d; returns {d: paths} plus where the vectors came from
    (real when the pool has enough and `synthetic` is not asked for)."""
    work.mkdir(parents=True, exist_ok=True)
    real = not synthetic and n + n_queries <= len(pool)
    rng = np.random.default_rng(seed + n)
    if real:
        full_base, full_q = pool[:n], pool[n : n + n_queries]
    else:
        gauss = GaussianFit(pool)
        full_path = write_chunked(work / f"full-{n}.npy", n, pool.shape[1], lambda a, b: gauss.sample(b - a, rng))
        full_base, full_q = np.load(full_path, mmap_mode="r"), gauss.sample(n_queries, rng)
    out = {"source": "real" if real else "synthetic", "dims": {}}
    for d in dims:
        reducer = Reducer.fit(pool, d, "pca")  # fitted on the real vectors only
        base = write_chunked(
            work / f"base-{n}-d{d}.npy", n, d, lambda a, b, reducer=reducer: reducer.transform(full_base[a:b])
        )
        q = reducer.transform(full_q)
        np.save(work / f"queries-{n}-d{d}.npy", q)
        np.save(work / f"gt-{n}-d{d}.npy", exact_topk(np.load(base, mmap_mode="r"), q, K))
        out["dims"][d] = {
            "base": str(base),
            "queries": str(work / f"queries-{n}-d{d}.npy"),
            "gt": str(work / f"gt-{n}-d{d}.npy"),
        }
    if not real:
        (work / f"full-{n}.npy").unlink()
    return out


# ---------------------------------------------------------------- one cell


def run_cell(paths: dict, kind: str, single: int = 30, single_budget_s: float = 10.0, seed: int = 0) -> dict:
    """Build one index over the base vectors and measure it (run in a fresh process for a per-cell peak RSS)."""
    faiss = import_faiss()
    rss_start = current_rss_mb()
    base = np.load(paths["base"])
    queries, truth = np.load(paths["queries"]), np.load(paths["gt"])
    n, d = base.shape
    entry = INDEX_TABLE[kind]
    train = ivf_train_size(n) if entry.ivf else None
    start = time.perf_counter()
    index = build_index(base, kind, seed=seed, train_size=train)
    build_s = time.perf_counter() - start
    if not entry.exact:
        base = None  # only the exact kind streams the same bytes below
    times, stream = [], []
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)  # single queries on one thread: compared with the one-thread bandwidth below
    deadline = time.perf_counter() + single_budget_s
    for i in range(min(single, len(queries))):
        t = time.perf_counter()
        index.search(queries[i : i + 1], K)
        times.append(time.perf_counter() - t)
        if entry.exact:  # the same bytes streamed by numpy, side by side: what the memory allows right now
            t = time.perf_counter()
            base.sum()
            stream.append(time.perf_counter() - t)
        if time.perf_counter() > deadline and len(times) >= 5:
            break
    faiss.omp_set_num_threads(threads)
    start = time.perf_counter()
    _, rows = index.search(queries, K)
    batch_s = time.perf_counter() - start
    recall = ann_recall_at_k(rows, truth, K)
    peak = peak_rss_mb()
    tmp = Path(paths["base"]).with_suffix(f".{kind}.index")
    (faiss.write_index_binary if entry.binary else faiss.write_index)(index.index, str(tmp))
    index_bytes = tmp.stat().st_size + index.side_bytes  # written to disk: no copy added to the peak RSS;
    # side_bytes: what a kind stores beside the FAISS file (ivf-pq-rerank's float vectors, 4·d per vector)
    tmp.unlink()
    return {
        "n": n,
        "d": d,
        "kind": kind,
        "build_s": build_s,
        "index_bytes": index_bytes,
        "bytes_per_vector": index_bytes / n,
        "peak_rss_mb": peak,
        "start_rss_mb": rss_start,
        "vectors_mb": n * d * 4 / 2**20,
        "p50_ms": 1000 * percentile(times, 50),
        "p95_ms": 1000 * percentile(times, 95),
        "min_ms": 1000 * min(times),
        "single_queries": len(times),
        **({"stream_p50_ms": 1000 * percentile(stream, 50), "stream_min_ms": 1000 * min(stream)} if stream else {}),
        "batch_queries": len(queries),
        "batch_qps": len(queries) / batch_s,
        "batch_ms_per_query": 1000 * batch_s / len(queries),
        "recall_at_10": recall,
        "train_size": train,
        "device": index.device,
        "single_threads": 1,
        "batch_threads": threads,
    }


def run_isolated(paths: dict, kind: str, **kw) -> dict:
    """run_cell in a freshly spawned process, so that its peak RSS is this cell's alone."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(run_cell, paths, kind, **kw).result()


# ---------------------------------------------------------------- bandwidth and growth


def measure_bandwidth(mb: int = 512, block_mb: int = 32, passes: int = 4) -> dict:
    """Single-thread memory bandwidth in GB/s: streaming reads (sum) and copies of `block_mb` blocks of an `mb`
    array, the best block of `passes` passes. Short blocks, best of many: on a shared machine a block that ran
    without being preempted is what the memory can do (a flat scan is timed the same way, by its p50)."""
    a = np.ones(mb * 2**20 // 4, np.float32)
    b = np.empty_like(a)
    step = block_mb * 2**20 // 4
    read, copy = [], []
    for _ in range(passes):
        for start in range(0, len(a) - step + 1, step):
            t = time.perf_counter()
            a[start : start + step].sum()
            read.append(time.perf_counter() - t)
            t = time.perf_counter()
            np.copyto(b[start : start + step], a[start : start + step])
            copy.append(time.perf_counter() - t)
    block = step * 4
    return {
        "read_gb_s": block / min(read) / 1e9,
        "copy_gb_s": 2 * block / min(copy) / 1e9,
        "read_median_gb_s": block / float(np.median(read)) / 1e9,
        "array_mb": mb,
        "block_mb": block_mb,
    }


def flat_vs_bandwidth(cell: dict, bandwidth: dict) -> dict:
    """A flat cell's single-query p50 against the time to stream its vectors once at the measured read bandwidth."""
    scanned = cell["n"] * cell["d"] * 4
    limit_ms = 1000 * scanned / (bandwidth["read_gb_s"] * 1e9)
    best = cell.get("min_ms")  # the fastest single query: the one least disturbed by other jobs on the cores
    return {
        "n": cell["n"],
        "d": cell["d"],
        "bytes_scanned": scanned,
        "limit_ms": limit_ms,
        "p50_ms": cell["p50_ms"],
        "ratio": cell["p50_ms"] / limit_ms,
        "min_ms": best,
        "min_ratio": None if best is None else best / limit_ms,
        # against numpy streaming the same array in the same process, interleaved query by query
        "stream_p50_ms": cell.get("stream_p50_ms"),
        "stream_ratio": cell["p50_ms"] / cell["stream_p50_ms"] if cell.get("stream_p50_ms") else None,
    }


def growth_exponents(cells: list[dict]) -> list[dict]:
    """For each (kind, d) with two or more N: the slope b of log(cost) = a + b·log(N), per metric."""
    out = []
    for kind, d in sorted({(c["kind"], c["d"]) for c in cells}):
        mine = sorted((c for c in cells if c["kind"] == kind and c["d"] == d), key=lambda c: c["n"])
        if len({c["n"] for c in mine}) < 2:
            continue
        row = {"kind": kind, "d": d, "ns": [c["n"] for c in mine]}
        for metric in METRICS:
            pts = [(c["n"], c[metric]) for c in mine if c[metric] and c[metric] > 0]
            if len(pts) >= 2:
                slope, icpt = np.polyfit(np.log([p[0] for p in pts]), np.log([p[1] for p in pts]), 1)
                row[metric] = {"exponent": float(slope), "log_coef": float(icpt)}
        out.append(row)
    return out


# ---------------------------------------------------------------- the grid


def load_results(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def run_scale(
    out: Path,
    ns=DEFAULT_NS,
    dims=DEFAULT_DIMS,
    kinds=DEFAULT_KINDS,
    n_queries: int = 100,
    single: int = 30,
    hnsw_max: int = HNSW_MAX,
    isolate: bool = True,
    resume: bool = False,
    pool: np.ndarray | None = None,
    bandwidth_mb: int = 512,
    progress=None,
) -> dict:
    """Measure every (N, d, kind) cell, saving results.json after each; returns the results with fits."""
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    sources = ["given"]
    if pool is None:
        pool, sources = real_pool()
    old = load_results(results_path) if resume else {}
    done = {(c["n"], c["d"], c["kind"]): c for c in old.get("cells", [])}
    results = {
        "pool_vectors": len(pool),
        "pool_sources": sources,
        "queries": n_queries,
        "k": K,
        "bandwidth": measure_bandwidth(bandwidth_mb),
        "cells": list(done.values()),
        "skipped": old.get("skipped", []),
        "data": old.get("data", {}),
        **({"ray_encode": old["ray_encode"]} if "ray_encode" in old else {}),
    }
    todo = [(n, d, kind) for n in ns for d in dims for kind in kinds if (n, d, kind) not in done]
    for n in sorted(ns):
        cells_here = [t for t in todo if t[0] == n]
        if not cells_here:
            continue
        data = prepare(out / "work", pool, n, dims, n_queries)
        results["data"][str(n)] = data["source"]
        for _, d, kind in cells_here:
            if INDEX_TABLE[kind].slow_build and n > hnsw_max:
                skip = {
                    "n": n,
                    "d": d,
                    "kind": kind,
                    "why": f"hnsw build above N={hnsw_max:,} takes over 10 minutes on 2 cores",
                }
                results["skipped"] += [skip] if skip not in results["skipped"] else []
                continue
            if progress:
                progress(f"N={n:,} d={d} {kind}")
            run = run_isolated if isolate else run_cell
            cell = {**run(data["dims"][d], kind, single=single), "source": data["source"]}
            results["cells"].append(cell)
            atomic_write_text(results_path, json.dumps(results, indent=1))
        for f in (out / "work").glob(f"*-{n}-d*.npy"):
            f.unlink()
    atomic_write_text(results_path, json.dumps(summarise(results), indent=1))
    return results


def summarise(results: dict) -> dict:
    """Add the flat-vs-bandwidth rows and the growth exponents, from the cells (also for a run that was killed);
    a cell skipped once and measured later (a higher --hnsw-max) is no longer listed as skipped."""
    measured = {(c["n"], c["d"], c["kind"]) for c in results["cells"]}
    results["skipped"] = [s for s in results.get("skipped", []) if (s["n"], s["d"], s["kind"]) not in measured]
    results["flat_vs_bandwidth"] = [
        flat_vs_bandwidth(c, results["bandwidth"])
        for c in sorted(results["cells"], key=lambda c: (c["n"], c["d"]))
        if c["kind"] == EXACT_KIND
    ]
    results["growth"] = growth_exponents(results["cells"])
    return results


def ray_encode_throughput(
    n_texts: int = 400, corpus: str = "scifact", encoder: str = "minilm", actors: int | None = None
) -> dict:
    """Passages/s of Ray Data encoder actors against one process with the same encoder, on the same texts.

    The single process has its model loaded before the clock starts; the Ray figure includes starting its actors
    and loading a model in each (what a build pays), but not starting Ray itself.
    """
    from rag.data.corpus import load_corpus
    from rag.encoders import get_encoder
    from rag.encoders.base import document_text
    from rag.index.shards import connect, encode_with_ray

    texts = [document_text(p) for p in load_corpus(corpus).passages[:n_texts]]
    model = get_encoder(encoder)
    model.encode(texts[:8], kind="document")  # warm
    start = time.perf_counter()
    single = model.encode(texts, kind="document")
    single_s = time.perf_counter() - start
    ray = connect()
    actors = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    start = time.perf_counter()
    vectors = encode_with_ray(texts, encoder, actors=actors)
    ray_s = time.perf_counter() - start
    return {
        "texts": len(texts),
        "actors": actors,
        "single_docs_per_s": len(texts) / single_s,
        "ray_docs_per_s": len(texts) / ray_s,
        "ratio": single_s / ray_s,
        "max_abs_diff": float(np.abs(vectors - single).max()),
    }
