"""scripts/gpu_sweep.sh runs end to end on the CPU with a tiny budget, so the GPU path cannot rot unseen."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_sweep_script_runs_tiny_on_cpu(tmp_path, wiki_slice):
    corpus = wiki_slice(tmp_path / "slice", 100_000)
    out = tmp_path / "gpu"
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "CORPUS": str(corpus),
        "CONV_DIMS": "16",
        "CONV_EPOCHS": "1",
        "CONV_EXTRA": "--layers 1 --heads 2 --vocab 400 --context 32 --threads 1 --batch 8 --patience 1",
        "DIMS": "16,32",
        "TOKENS": str(10 * 8 * 32),
        "BATCH": "8",
        "EXTRA_ARGS": "--layers 1 --heads 2 --vocab 400 --context 32 --threads 1 --slices 2",
        "SEARCH_N": "2000",
        "SEARCH_Q": "16",
        "SEARCH_DIMS": "16,32",
        "OMP_NUM_THREADS": "1",
        "GRID_BUDGETS": "2e9",
        "GRID_DIMS": "16,32,64",
        "GRID_BATCH": "8",
        "GRID_PRECISION": "fp32",
        "GRID_EXTRA": "--layers 1 --heads 2 --vocab 400 --context 32 --eval-tokens 1024 --slices 2 --kn-orders 3",
    }
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "gpu_sweep.sh"), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((out / "sweep" / "results.json").read_text())
    assert data["plan"]["budget"] == "tokens" and [r["tokens_seen"] for r in data["rows"]] == [10 * 8 * 32] * 2
    assert all(r["tied"] and r["pos"] == "learned" for r in data["rows"])
    conv = json.loads((out / "converge" / "d16" / "summary.json").read_text())
    assert (
        conv["whole_split"]
        and conv["max_epochs"] == 1
        and conv["test_bpb"] > 0
        and conv["curve"][-1]["epoch"] == pytest.approx(1, abs=0.02)
    )
    timings = json.loads((out / "search_timings.json").read_text())
    assert {t["d"] for t in timings} == {16, 32} and all(t["ms_per_query"] > 0 for t in timings)
    assert (out / "sweep" / "compute_frontier.png").exists() and (out / "search_timings.md").exists()
    grid = json.loads((out / "isoflop" / "isoflop.json").read_text())
    assert sorted(r["dim"] for r in grid["rows"]) == [16, 32, 64] and grid["settings"]["precision"] == "fp32"
    header = (REPO / "scripts" / "gpu_sweep.sh").read_text()[:2000]
    assert "1,773,130 tokens" in header and "1e14, 3e14, 1e15" in header
