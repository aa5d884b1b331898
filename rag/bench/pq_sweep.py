"""ivf-pq's recall against its speed, side by side with exact search in one process (`rag bench scale --pq-sweep`).

The grid (rag.bench.scale) measured ivf-pq at 1M, d=128 at recall@10 0.335. This sweep tells the causes apart and
measures the standard fixes, on one base, one query set and one exact top-10:

  flat       exact search: the QPS every row is compared with (same process, same queries, same threads);
  ceiling    the recall the coarse quantizer alone allows at an nprobe: the share of true neighbours whose list
             is probed (what ivf-flat reaches), so the loss of IVF and the loss of PQ are told apart;
  variants   IVF + PQ with the project's code (m = d/4 sub-quantisers of 8 bits), twice as many (m = d/2), and
             4-bit fast-scan codes (m = d/2, SIMD scanning), each at several nprobe and each with its top-R
             candidates re-ranked by exact inner products with the float vectors, read from the memory-mapped
             base file (R = k: no rerank).

All variants share one coarse quantizer (trained once on 40 vectors per list, as in the grid), so they probe the
same lists. Bytes are counted honestly: `ram_bytes_per_vector` is the serialised index ÷ N; a rerank also reads
the float vectors (4·d bytes per vector) from disk through the page cache. faiss's IndexRefineFlat would keep
them in RAM instead: the same recall, with 4·d more RAM bytes per vector.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from rag.bench.scale import K, prepare, real_pool
from rag.config import atomic_write_text
from rag.index.kinds import import_faiss, ivf_lists, ivf_train_size, pq_shape
from rag.index.search_index import rerank_exact
from rag.studies.metrics import ann_recall_at_k

NPROBE_FRACTIONS = (1 / 256, 1 / 64, 1 / 32, 1 / 16, 1 / 8, 1 / 4)  # of nlist; the project's ivf-pq probes nlist/8
RERANK = (K, 50, 100, 200, 500, 1000)  # candidates re-ranked with exact vectors; K means none
GOAL_RECALL = 0.9


def pq_variants(d: int, n: int) -> dict[str, tuple[int, int, bool]]:
    """name -> (m, bits, fast-scan): the project's code (m = d/4), twice the sub-quantisers, and 4-bit fast-scan
    codes with m = d/2 (the project's bytes) and m = d (one dimension per sub-quantiser, twice the bytes)."""
    m, bits = pq_shape(d, n)
    out = {f"PQ{m}x{bits}": (m, bits, False)}
    if d % (2 * m) == 0:
        out[f"PQ{2 * m}x{bits}"] = (2 * m, bits, False)
        if bits >= 4:
            out[f"PQ{2 * m}x4fs"] = (2 * m, 4, True)
    if bits >= 4 and d != 2 * m:
        out[f"PQ{d}x4fs"] = (d, 4, True)
    return out


def timed(fn, repeats: int):
    """fn()'s result and its best wall time of `repeats` runs (on shared cores the least disturbed one)."""
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


def rerank(base: np.ndarray, queries: np.ndarray, cand: np.ndarray, k: int) -> np.ndarray:
    """The rows of rag.index.search_index.rerank_exact in one chunk (one sorted read of every query's distinct candidates)."""
    return rerank_exact(base, queries, cand, k, chunk=max(1, len(queries)))[1]


def drop_from_page_cache(path: Path) -> None:
    """Ask the kernel to forget the file's cached pages (clean pages not mapped by anyone; Linux)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def rerank_cost(path: Path, queries: np.ndarray, depth: int = 200, repeats: int = 3, seed: int = 0) -> dict:
    """Milliseconds per query to re-rank `depth` scattered candidates from the float file, from the page cache
    (warm) and after dropping the file from it (cold: every candidate is a read from the disk), best of `repeats`.
    What a rerank adds when the floats do not fit in RAM."""
    n = np.load(path, mmap_mode="r").shape[0]
    cand = np.random.default_rng(seed).integers(0, n, (len(queries), depth))
    warm, cold = [], []
    for _ in range(repeats):
        base = np.load(path, mmap_mode="r")
        rerank(base, queries, cand, K)  # reads them into the page cache
        start = time.perf_counter()
        rerank(base, queries, cand, K)
        warm.append(time.perf_counter() - start)
        del base  # a mapped page is not dropped
        drop_from_page_cache(path)
        start = time.perf_counter()
        rerank(np.load(path, mmap_mode="r"), queries, cand, K)
        cold.append(time.perf_counter() - start)
    per_query = 1000 / len(queries)
    return {
        "depth": depth,
        "queries": len(queries),
        "warm_ms_per_query": min(warm) * per_query,
        "cold_ms_per_query": min(cold) * per_query,
    }


def coarse_ceiling(quantizer, home: np.ndarray, queries: np.ndarray, nprobe: int) -> float:
    """Share of the true top-k whose list (home[q, j]) is among the nprobe lists probed for query q."""
    _, probed = quantizer.search(queries, nprobe)
    return float(np.mean([np.isin(h, p).mean() for h, p in zip(home, probed)]))


def sweep_one(
    paths: dict, repeats: int = 2, fractions=NPROBE_FRACTIONS, reranks=RERANK, seed: int = 0, progress=None
) -> dict:
    """Flat, the coarse ceiling and every (variant, nprobe, R) on one base; QPS is batch search on all threads."""
    faiss = import_faiss()
    queries, truth = np.load(paths["queries"]), np.load(paths["gt"])
    cost = rerank_cost(Path(paths["base"]), queries)  # first: pages this process maps can't be dropped
    base = np.load(paths["base"], mmap_mode="r")
    x = np.ascontiguousarray(base, dtype=np.float32)
    n, d = x.shape
    flat = faiss.IndexFlatIP(d)
    flat.add(x)
    (_, rows), flat_s = timed(lambda: flat.search(queries, K), repeats)
    out = {
        "n": n,
        "d": d,
        "queries": len(queries),
        "threads": faiss.omp_get_max_threads(),
        "repeats": repeats,
        "flat": {
            "qps": len(queries) / flat_s,
            "recall_at_10": ann_recall_at_k(rows, truth, K),
            "ram_bytes_per_vector": 4 * d,
        },
    }
    flat = None  # free its memory before the IVF-PQ builds
    out["rerank_cost"] = cost
    nlist = ivf_lists(n)
    rng = np.random.default_rng(seed)
    train = x[np.sort(rng.choice(n, ivf_train_size(n), replace=False))]
    quantizer = faiss.IndexFlatIP(d)
    coarse = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)  # trains the shared quantizer
    coarse.cp.seed = seed
    start = time.perf_counter()
    coarse.train(train)
    coarse_s = time.perf_counter() - start
    _, home = quantizer.search(np.ascontiguousarray(base[truth.ravel()]), 1)
    home = home.reshape(truth.shape)
    nprobes = sorted({min(nlist, max(1, round(nlist * f))) for f in fractions})
    out.update(
        nlist=nlist,
        train_size=len(train),
        coarse_train_s=coarse_s,
        nprobes=nprobes,
        ceiling={str(p): coarse_ceiling(quantizer, home, queries, p) for p in nprobes},
        rows=[],
    )
    for name, (m, bits, fast) in pq_variants(d, n).items():
        if progress:
            progress(f"N={n:,} d={d} {name}")
        cls = faiss.IndexIVFPQFastScan if fast else faiss.IndexIVFPQ
        index = cls(quantizer, d, nlist, m, bits, faiss.METRIC_INNER_PRODUCT)
        index.pq.cp.min_points_per_centroid = 1  # tiny test sets: no warning per sub-quantiser (1M has plenty)
        start = time.perf_counter()
        index.train(train)  # the PQ only: the shared quantizer is trained already
        index.add(x)
        build_s = time.perf_counter() - start + coarse_s
        ram = faiss.serialize_index(index).nbytes / n
        for nprobe in nprobes:
            index.nprobe = nprobe
            for r in reranks:

                def search(r=r, index=index):
                    _, cand = index.search(queries, r)
                    return cand if r <= K else rerank(base, queries, cand, K)

                rows, secs = timed(search, repeats)
                qps = len(queries) / secs
                out["rows"].append(
                    {
                        "variant": name,
                        "m": m,
                        "bits": bits,
                        "fast_scan": fast,
                        "nprobe": nprobe,
                        "rerank": r if r > K else 0,
                        "recall_at_10": ann_recall_at_k(rows, truth, K),
                        "ceiling": out["ceiling"][str(nprobe)],
                        "qps": qps,
                        "qps_vs_flat": qps / out["flat"]["qps"],
                        "build_s": build_s,
                        "ram_bytes_per_vector": ram,
                        "disk_bytes_per_vector": 4 * d if r > K else 0,
                    }
                )
        index = None  # free it before the next code size
    return out


def best_setting(run: dict, goal: float = GOAL_RECALL) -> dict | None:
    """The fastest row that reaches the recall goal, or None."""
    ok = [r for r in run["rows"] if r["recall_at_10"] >= goal]
    return max(ok, key=lambda r: r["qps"]) if ok else None


def run_pq_sweep(
    out: Path,
    ns,
    dims,
    n_queries: int = 100,
    repeats: int = 2,
    pool: np.ndarray | None = None,
    both_sources: bool = True,
    progress=None,
) -> dict:
    """The sweep for every N and d; where the real pool is big enough, on real vectors and on synthetic ones drawn
    from their Gaussian fit (the same N, side by side: how much the distribution matters). Saved after each run."""
    out.mkdir(parents=True, exist_ok=True)
    sources = ["given"]
    if pool is None:
        pool, sources = real_pool()
    results = {"pool_vectors": len(pool), "pool_sources": sources, "k": K, "goal_recall": GOAL_RECALL, "runs": []}
    for n in sorted(ns):
        enough = n + n_queries <= len(pool)
        for synthetic in [False, True] if enough and both_sources else [not enough]:
            data = prepare(out / "work", pool, n, dims, n_queries, synthetic=synthetic)
            for d in dims:
                run = sweep_one(data["dims"][d], repeats=repeats, progress=progress)
                run["source"] = data["source"]
                run["best"] = best_setting(run)
                results["runs"].append(run)
                atomic_write_text(out / "pq_sweep.json", json.dumps(results, indent=1))
            for f in (out / "work").glob(f"*-{n}-d*.npy"):
                f.unlink()
    return results
