"""rag bench scale --pq-sweep: ivf-pq variants, nprobe and rerank beside flat, on real MiniLM vectors (a SciFact
subset) and synthetic ones from their Gaussian fit; real FAISS, small N."""

from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.fixture(scope="module")
def pool(scifact_small):
    from rag.encoders import get_encoder
    from rag.encoders.cache import cached_embeddings, embed_corpus

    cached = cached_embeddings(scifact_small, "minilm")
    return cached[0] if cached else embed_corpus(scifact_small, get_encoder("minilm"))


def test_rerank_keeps_the_exact_top_k_of_the_candidates_and_puts_missing_rows_last():
    from rag.bench.pq_sweep import rerank

    rng = np.random.default_rng(0)
    base, q = rng.standard_normal((500, 16)).astype(np.float32), rng.standard_normal((4, 16)).astype(np.float32)
    cand = np.stack([rng.choice(500, 30, replace=False) for _ in q])
    cand[0, 5:] = -1  # faiss pads with -1 when a probe finds fewer than R vectors
    rows = rerank(base, q, cand, 10)
    for i in range(len(q)):
        real = cand[i][cand[i] >= 0]
        want = real[np.argsort(-(base[real] @ q[i]))][:10]
        assert rows[i][: len(want)].tolist() == want.tolist()
    assert rows[0][5:].tolist() == [-1] * 5
    # every row a candidate: the rerank is exact search
    from rag.bench.scale import exact_topk

    assert np.array_equal(rerank(base, q, np.tile(np.arange(500), (4, 1)), 10), exact_topk(base, q, 10))


def test_sweep_separates_the_coarse_ceiling_from_pq_loss_and_counts_bytes(pool, tmp_path):
    from rag.bench.pq_sweep import best_setting, sweep_one
    from rag.bench.scale import prepare

    paths = prepare(tmp_path, pool, 2000, (32,), 20, synthetic=True)["dims"][32]
    run = sweep_one(paths, repeats=1)
    assert run["flat"]["recall_at_10"] == 1.0 and run["flat"]["qps"] > 0
    ceiling = [run["ceiling"][str(p)] for p in run["nprobes"]]
    assert ceiling == sorted(ceiling) and ceiling[0] < ceiling[-1]  # more lists probed, more neighbours reachable
    variants = {r["variant"] for r in run["rows"]}
    assert variants == {"PQ8x8", "PQ16x8", "PQ16x4fs", "PQ32x4fs"}  # d/4, d/2, d/2 and d fast-scan at d=32
    for r in run["rows"]:
        # a candidate can only come from a probed list: no setting beats its ceiling
        assert r["recall_at_10"] <= r["ceiling"] + 1e-9
        assert r["disk_bytes_per_vector"] == (4 * 32 if r["rerank"] else 0)
    top = max(run["nprobes"])
    by = {(r["variant"], r["rerank"]): r for r in run["rows"] if r["nprobe"] == top}
    for v in variants:  # re-ranking 200 candidates with the float vectors recovers what PQ's codes lost
        assert by[(v, 200)]["recall_at_10"] >= by[(v, 0)]["recall_at_10"]
        assert by[(v, 200)]["recall_at_10"] >= run["ceiling"][str(top)] - 0.05
    ram = {v: by[(v, 0)]["ram_bytes_per_vector"] for v in variants}
    assert ram["PQ16x4fs"] < ram["PQ8x8"] + 4 < ram["PQ16x8"]  # 8 B, 16 B and 8 B codes (+ ids, lists)
    best = best_setting(run)
    assert best is None or (
        best["recall_at_10"] >= 0.9 and all(r["qps"] <= best["qps"] for r in run["rows"] if r["recall_at_10"] >= 0.9)
    )


def test_both_sources_side_by_side_written_as_it_goes(pool, tmp_path):
    from rag.bench.pq_sweep import run_pq_sweep
    from rag.bench.scale_report import pq_markdown

    r = run_pq_sweep(tmp_path, [100], [16], n_queries=20, repeats=1, pool=pool)
    assert [run["source"] for run in r["runs"]] == ["real", "synthetic"]  # 140 real vectors: enough for both
    assert json.loads((tmp_path / "pq_sweep.json").read_text())["runs"] == json.loads(json.dumps(r["runs"]))
    assert not list((tmp_path / "work").glob("*.npy"))
    md = pq_markdown(r)
    assert md.count("| variant |") == 2 and "(real)" in md and "(synthetic)" in md


def test_rerank_cost_reads_the_candidates_warm_and_after_dropping_the_file_from_the_page_cache(tmp_path):
    from rag.bench.pq_sweep import rerank_cost

    rng = np.random.default_rng(0)
    path = tmp_path / "base.npy"
    np.save(path, rng.standard_normal((20_000, 64)).astype(np.float32))
    cost = rerank_cost(path, rng.standard_normal((10, 64)).astype(np.float32), depth=50, repeats=1)
    assert cost["depth"] == 50 and cost["queries"] == 10
    assert cost["warm_ms_per_query"] > 0 and cost["cold_ms_per_query"] > 0
