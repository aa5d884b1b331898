#!/usr/bin/env bash
# The LM study on one GPU: the token-matched d-sweep, the iso-FLOP grid at 100-1000x the CPU budgets, and
# exact-search timings (torch matmul + top-k), into one folder.
#
#   scripts/gpu_sweep.sh [OUT]          default OUT=results/lm_gpu
#
# Real token counts (wiki-lm, BPE-10k): the train split is 1,773,130 tokens (1.77M); valid 0.09M, test 0.12M.
# 1) Token-matched sweep: every d (128, 256, 512, 1024; tied head, learned positions) sees EPOCHS (10) passes,
#    i.e. 17.7M training tokens per d; the d=1024 model has 86M parameters. Batch 64 x 128 tokens, no torch.compile.
# 2) Iso-FLOP grid (rag lm isoflop): budgets GRID_BUDGETS (1e14, 3e14, 1e15 FLOPs: 100x the CPU grid's 1e12, 3e12
#    and 1e13; add 1e16 for 1000x), d in GRID_DIMS (16..512), one precision (GRID_PRECISION, bf16 on the GPU) for
#    every d, batch GRID_BATCH (16 x 128, as on the CPU). Tokens per run = C / (training FLOPs per token):
#    at 1e15 FLOPs d=32 sees 376M tokens (212 epochs: the corpus repeats), d=128 63M (35 epochs), d=512 6.7M
#    (3.8 epochs); at 1e14 d=128 sees 6.3M tokens (3.5 epochs). These budgets exceed what the corpus holds for small
#    d: read the GPU iso-FLOP figures as multi-epoch results.
# 0) To convergence (rag lm sweep --to-convergence), the command the CPU ran for d = 64 and 128, at d in CONV_DIMS
#    (512, 1024) with the same settings: batch 16 x 128, the LR rule, the dropout/weight-decay preset per width,
#    cosine over CONV_EPOCHS (12) epochs, whole-split validation (and test) every 0.5 epoch, patience 3, the best
#    checkpoint scored on the whole test split. One summary per width: OUT/converge/d<D>/summary.json; copy them to
#    docs/lm/converge/d<D>.json and run rag lm converge-report (CONV_DIMS=none skips this step).
# Writes OUT/converge/d<D>/summary.json, OUT/sweep/{results.csv,results.json,report.md,*.png},
# OUT/isoflop/{runs.csv,isoflop.json,summary.md,*.png} and OUT/search_timings.{json,md}.
# Environment (the test suite uses these for a tiny CPU run so the script cannot rot):
#   PYTHON, CORPUS, CONV_DIMS, CONV_EPOCHS, CONV_EXTRA, DIMS, EPOCHS, TOKENS (overrides EPOCHS), BATCH, EXTRA_ARGS, SEARCH_N, SEARCH_Q, SEARCH_DIMS,
#   GRID_BUDGETS, GRID_DIMS, GRID_BATCH, GRID_PRECISION, GRID_EXTRA ("" skips nothing; GRID_BUDGETS=none skips the grid)
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
CONV_DIMS=${CONV_DIMS:-512,1024}
if [ "$CONV_DIMS" != none ]; then
  CONV_RESUME=(); [ -f "$OUT/converge/converge.json" ] && CONV_RESUME=(--resume)
  # shellcheck disable=SC2086  # CONV_EXTRA is a list of options
  "$PYTHON" -m rag.commands.lm sweep --to-convergence --corpus "$CORPUS" --dims "$CONV_DIMS" \
    --max-epochs "${CONV_EPOCHS:-12}" --eval-every 0.5 --patience 3 --batch 16 --compile off \
    "${CONV_RESUME[@]}" --out "$OUT/converge" ${CONV_EXTRA:-}
fi

if [ -n "${TOKENS:-}" ]; then BUDGET=(--tokens "$TOKENS"); else BUDGET=(--epochs "$EPOCHS"); fi
RESUME=(); [ -f "$OUT/sweep/sweep.json" ] && RESUME=(--resume)

# shellcheck disable=SC2086  # EXTRA_ARGS is a list of options
"$PYTHON" -m rag.commands.lm sweep --corpus "$CORPUS" --dims "$DIMS" --budget tokens "${BUDGET[@]}" \
  --tie --pos learned --batch "$BATCH" --compile off --eval-tokens 0 --yes "${RESUME[@]}" \
  --out "$OUT/sweep" ${EXTRA_ARGS:-}

GRID_BUDGETS=${GRID_BUDGETS:-1e14,3e14,1e15}
if [ "$GRID_BUDGETS" != none ]; then
  # shellcheck disable=SC2086  # GRID_EXTRA is a list of options
  "$PYTHON" -m rag.commands.lm isoflop --corpus "$CORPUS" --budgets "$GRID_BUDGETS" \
    --dims "${GRID_DIMS:-16,24,32,48,64,96,128,192,256,384,512}" --batch "${GRID_BATCH:-16}" \
    --precision "${GRID_PRECISION:-bf16}" --out "$OUT/isoflop" ${GRID_EXTRA:-}
fi

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
