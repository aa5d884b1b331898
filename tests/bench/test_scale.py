"""rag bench scale: real MiniLM vectors (a SciFact subset), synthetic ones beyond them, real FAISS, small N."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def pool(scifact_small):
    """Real MiniLM document vectors of the SciFact subset (140 passages; cached across runs)."""
    from rag.encoders import get_encoder
    from rag.encoders.cache import cached_embeddings, embed_corpus

    cached = cached_embeddings(scifact_small, "minilm")
    return cached[0] if cached else embed_corpus(scifact_small, get_encoder("minilm"))


def test_synthetic_vectors_match_the_real_mean_and_are_unit_length(pool):
    from rag.bench.scale import GaussianFit

    x = GaussianFit(pool).sample(4000, np.random.default_rng(0))
    assert x.shape == (4000, pool.shape[1]) and x.dtype == np.float32
    assert np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-4)
    # the synthetic cloud points where the real one does (cosine of the means), unlike a random direction
    cos = float(x.mean(0) @ pool.mean(0) / np.linalg.norm(x.mean(0)) / np.linalg.norm(pool.mean(0)))
    assert cos > 0.9


def test_exact_topk_in_chunks_equals_one_matrix_product():
    from rag.bench.scale import exact_topk

    rng = np.random.default_rng(1)
    base, q = rng.standard_normal((1000, 16)).astype(np.float32), rng.standard_normal((7, 16)).astype(np.float32)
    want = np.argsort(-(q @ base.T), axis=1)[:, :10]
    assert np.array_equal(exact_topk(base, q, 10, chunk=128), want)


@pytest.mark.slow
def test_grid_measures_every_cell_fits_growth_and_resumes(pool, tmp_path):
    from rag.bench.scale import DEFAULT_KINDS, load_results, run_scale

    out = tmp_path / "scale"
    r = run_scale(
        out,
        ns=(100, 1000),
        dims=(32,),
        kinds=DEFAULT_KINDS,
        n_queries=20,
        single=5,
        isolate=False,
        pool=pool,
        bandwidth_mb=64,
    )
    cells = {(c["n"], c["kind"]): c for c in r["cells"]}
    assert len(cells) == 2 * len(DEFAULT_KINDS)
    assert r["data"] == {"100": "real", "1000": "synthetic"}  # 140 real vectors: enough for N=100 + 20 queries
    assert cells[(1000, "flat")]["recall_at_10"] == 1.0  # flat is the exact reference
    assert all(0 <= c["recall_at_10"] <= 1 and c["batch_qps"] > 0 and c["p50_ms"] > 0 for c in r["cells"])
    assert cells[(1000, "sq8")]["index_bytes"] < cells[(1000, "flat")]["index_bytes"] / 3  # 1 byte vs 4 per coord
    flat = next(g for g in r["growth"] if g["kind"] == "flat")
    assert 0.95 < flat["index_bytes"]["exponent"] < 1.05  # a flat index is N·d·4 bytes
    assert r["bandwidth"]["read_gb_s"] > 0.1
    assert [f["n"] for f in r["flat_vs_bandwidth"]] == [100, 1000] and r["flat_vs_bandwidth"][1]["ratio"] > 0
    assert load_results(out / "results.json")["cells"] == r["cells"]  # written as it goes
    assert not list((out / "work").glob("*.npy"))  # the vectors are removed once measured

    again = run_scale(
        out,
        ns=(100, 1000),
        dims=(32,),
        kinds=DEFAULT_KINDS,
        n_queries=20,
        isolate=False,
        pool=pool,
        resume=True,
        bandwidth_mb=64,
    )
    assert again["cells"] == r["cells"]  # nothing measured twice


@pytest.mark.slow
def test_an_isolated_cell_reports_its_own_peak_rss(pool, tmp_path):
    from rag.bench.scale import prepare, run_isolated

    data = prepare(tmp_path, pool, 100_000, (64,), n_queries=10)
    cell = run_isolated(data["dims"][64], "flat", single=3)
    assert cell["n"] == 100_000 and cell["recall_at_10"] == 1.0
    # the vectors (24 MB) and a flat copy of them were in that process, over what it held at the start
    assert cell["peak_rss_mb"] >= cell["start_rss_mb"] + cell["vectors_mb"]


def test_hnsw_above_its_limit_is_skipped_with_the_reason(pool, tmp_path):
    from rag.bench.scale import run_scale

    r = run_scale(
        tmp_path,
        ns=(500,),
        dims=(8,),
        kinds=("flat", "hnsw"),
        n_queries=10,
        single=2,
        hnsw_max=400,
        isolate=False,
        pool=pool,
        bandwidth_mb=64,
    )
    assert [c["kind"] for c in r["cells"]] == ["flat"]
    assert r["skipped"][0]["kind"] == "hnsw" and "400" in r["skipped"][0]["why"]


def test_projection_arithmetic():
    from rag.bench.scale_report import project

    cells = [
        {"kind": "flat", "d": 384, "n": n, "bytes_per_vector": 1536.0, "p50_ms": n / 1e4, "recall_at_10": 1.0}
        for n in (10_000, 100_000)
    ]
    results = {"cells": cells, "growth": [{"kind": "flat", "d": 384, "p50_ms": {"exponent": 1.0}}]}
    p = project(results, targets=(1e9,), ram_gb=256, usable=0.7, gpus=8, gpu_docs_per_s=5000, rtt_ms=2.0)
    row = p["rows"][0]
    assert row["bytes"] == pytest.approx(1.536e12)
    assert row["machines"] == math.ceil(1.536e12 / (0.7 * 256e9)) == 9
    # 1e9/9 vectors per shard, linear from 10 ms at 100k, plus the round trip
    assert row["fanout_p50_ms"] == pytest.approx(10.0 * (1e9 / 9) / 1e5 + 2.0)
    assert p["encoding"][0]["gpu_hours"] == pytest.approx(1e9 / 40_000 / 3600)


def test_cli_bench_scale_measures_and_projects(cli, pool, tmp_path):
    out = tmp_path / "s"
    r = cli(
        [
            "bench",
            "scale",
            "--n",
            "100,400",
            "--dims",
            "16",
            "--kinds",
            "flat,sq8",
            "--queries",
            "10",
            "--single",
            "3",
            "--out",
            str(out),
            "--in-process",
            "--bandwidth-mb",
            "64",
            "--project",
            "1e8,1e9",
            "--json",
        ]
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert {(c["n"], c["kind"]) for c in data["cells"]} == {(100, "flat"), (100, "sq8"), (400, "flat"), (400, "sq8")}
    assert {row["target"] for row in data["projection"]["rows"]} == {1e8, 1e9}
    assert all((out / f"scale-{m}.png").exists() for m in ("build_s", "p50_ms"))
    r = cli(
        ["bench", "scale", "--out", str(out), "--only-project", "--project", "1e9", "--markdown", str(out / "t.md")]
    )
    assert r.exit_code == 0, r.output
    assert "projection" in r.output and "encoding 1e+09 passages" in r.output
    md = (out / "t.md").read_text()
    assert "| 400 | 16 | sq8 |" in md and "| 1e+09 | flat | 16 |" in md


@pytest.mark.parametrize(
    "args, words",
    [
        (["--n", "ten"], ["--n", "comma-separated"]),
        (["--kinds", "flat,annoy"], ["annoy", "ivf-pq"]),
        (["--n", "10", "--queries", "10"], ["twice --queries"]),
        (["--only-project", "--out", "{tmp}/empty"], ["no measured cells"]),
    ],
)
def test_cli_bench_scale_bad_input_is_one_line(cli, tmp_path, args, words):
    r = cli(["bench", "scale", *[a.replace("{tmp}", str(tmp_path)) for a in args]])
    assert r.exit_code != 0
    assert "Traceback" not in r.output
    assert all(w in r.output for w in words), r.output


def test_a_cell_skipped_once_and_measured_later_is_no_longer_listed_as_skipped():
    from rag.bench.scale import summarise

    def cell(n):
        return {
            "n": n,
            "d": 8,
            "kind": "hnsw",
            "build_s": 1.0,
            "index_bytes": 10 * n,
            "peak_rss_mb": 50.0,
            "p50_ms": 0.1,
            "p95_ms": 0.2,
            "batch_ms_per_query": 0.05,
        }

    skip = {"n": 1000, "d": 16, "kind": "hnsw", "why": "over --hnsw-max"}
    r = summarise(
        {
            "bandwidth": {"read_gb_s": 10.0},
            "cells": [cell(100), cell(1000)],
            "skipped": [{"n": 1000, "d": 8, "kind": "hnsw", "why": "over --hnsw-max"}, skip],
        }
    )
    assert r["skipped"] == [skip]  # (1000, 8) was measured after all; (1000, 16) was not
    assert r["growth"][0]["index_bytes"]["exponent"] == pytest.approx(1.0)
