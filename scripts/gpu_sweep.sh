#!/usr/bin/env bash
# The token-matched LM d-sweep on one GPU, plus exact-search timings (torch matmul + top-k), into one folder.
#
#   scripts/gpu_sweep.sh [OUT]          default OUT=results/lm_gpu
#
# Every d (128, 256, 512, 1024; tied head, learned positions) sees EPOCHS (10) passes over wiki-lm.
# Sized for one H200: about 2.5M tokens per epoch (wiki-lm: 1.77M), the d=1024 model has 86M parameters;
# batch 64 x 128 tokens, no torch.compile (its compile time would not pay back at this size).
# Writes OUT/sweep/{results.csv,results.json,report.md,*.png} and OUT/search_timings.{json,md}.
# Environment (the test suite uses these for a tiny CPU run so the script cannot rot):
#   PYTHON, CORPUS, DIMS, EPOCHS, TOKENS (overrides EPOCHS), BATCH, EXTRA_ARGS, SEARCH_N, SEARCH_Q, SEARCH_DIMS
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/lm_gpu}
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python )}
CORPUS=${CORPUS:-wiki-lm}
DIMS=${DIMS:-128,256,512,1024}
EPOCHS=${EPOCHS:-10}
BATCH=${BATCH:-64}
SEARCH_N=${SEARCH_N:-1000000}
SEARCH_Q=${SEARCH_Q:-1024}
SEARCH_DIMS=${SEARCH_DIMS:-128,256,384,512,768,1024}
mkdir -p "$OUT"
if [ -n "${TOKENS:-}" ]; then BUDGET=(--tokens "$TOKENS"); else BUDGET=(--epochs "$EPOCHS"); fi
RESUME=(); [ -f "$OUT/sweep/sweep.json" ] && RESUME=(--resume)

# shellcheck disable=SC2086  # EXTRA_ARGS is a list of options
"$PYTHON" -m rag.commands.lm sweep --corpus "$CORPUS" --dims "$DIMS" --budget tokens "${BUDGET[@]}" \
  --tie --pos learned --batch "$BATCH" --compile off --eval-tokens 0 --yes "${RESUME[@]}" \
  --out "$OUT/sweep" ${EXTRA_ARGS:-}

SEARCH_N=$SEARCH_N SEARCH_Q=$SEARCH_Q SEARCH_DIMS=$SEARCH_DIMS OUT=$OUT "$PYTHON" - <<'PY'
"""Exact inner-product search timed on the training device: scores = Q @ X.T in chunks, then top-10."""
import json
import os
import time

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
n, q, k = int(os.environ["SEARCH_N"]), int(os.environ["SEARCH_Q"]), 10
rows = []
for d in [int(x) for x in os.environ["SEARCH_DIMS"].split(",")]:
    for dtype in (torch.float32, torch.float16 if device == "cuda" else torch.bfloat16):
        gen = torch.Generator(device=device).manual_seed(0)
        x = torch.nn.functional.normalize(torch.randn(n, d, device=device, generator=gen), dim=1).to(dtype)
        queries = torch.nn.functional.normalize(torch.randn(q, d, device=device, generator=gen), dim=1).to(dtype)

        def search():
            return torch.topk(queries @ x.T, k, dim=1)

        search()
        if device == "cuda":
            torch.cuda.synchronize()
        reps, t0 = 0, time.perf_counter()
        while reps < 3 or time.perf_counter() - t0 < 0.5:
            search()
            reps += 1
        if device == "cuda":
            torch.cuda.synchronize()
        s = (time.perf_counter() - t0) / reps
        rows.append({"device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "dtype": str(dtype).split(".")[-1],
                     "n": n, "queries": q, "d": d, "batch_ms": round(1000 * s, 3), "ms_per_query": round(1000 * s / q, 5),
                     "queries_per_s": round(q / s, 1)})
        print(f"search d={d} {rows[-1]['dtype']}: {rows[-1]['ms_per_query']:.4f} ms/query over {n:,} vectors", flush=True)
        del x, queries
out = os.environ["OUT"]
with open(os.path.join(out, "search_timings.json"), "w") as f:
    json.dump(rows, f, indent=1)
with open(os.path.join(out, "search_timings.md"), "w") as f:
    f.write(f"# Exact search timings ({rows[0]['device']})\n\nA batch of {q} queries against {n:,} unit vectors: "
            "scores by one matmul, then top-10.\n\n| d | dtype | batch ms | ms/query | queries/s |\n|---|---|---|---|---|\n")
    f.writelines(f"| {r['d']} | {r['dtype']} | {r['batch_ms']} | {r['ms_per_query']} | {r['queries_per_s']:,} |\n" for r in rows)
PY
echo "figures in $OUT"
