"""The d-sweep: train one model per d under one budget, then write CSV, JSON and the report.

Two budget modes (`--budget`):
- compute (default on CPU): every d gets the same training FLOPs F (flops_per_token(d) x tokens).
  F is given (--flops) or sized from each d's measured training throughput so that the whole sweep
  fits `minutes`:  F = safety * minutes*60 / sum_d 1/(flops_per_token_d * rate_d).
  The plan stores F and each d's steps, so the result does not depend on how busy the machine was
  later (a busy machine only makes the sweep take longer).
- tokens (default on GPU): every d gets the same tokens (--tokens) or passes over the data (--epochs).
The plan is written to sweep.json once the budget is known; --resume reads it back.
"""

from __future__ import annotations

import csv
import gc
import json
import math
import time
from dataclasses import replace
from pathlib import Path

from rag.config import RagError
from rag.lm.checkpoint import read_json
from rag.lm.data import PROBE_STEP, prepare, train_batch
from rag.lm.model import GPT, flops_per_token
from rag.lm.runtime import choose
from rag.lm.settings import TrainConfig, config_of
from rag.lm.train import train

COLUMNS = (
    "dim,layers,heads,vocab,tied,pos,init,params,embedding_params,position_params,embedding_share,bytes_fp32,"
    "bytes_fp16,train_mem_est_bytes,tokens_seen,train_flops,val_loss,test_loss,val_ppl,test_ppl,val_bpb,test_bpb,"
    "bigram_test_ppl,vs_bigram_test_ppl,epoch_s,tokens_per_s,peak_mem_bytes,flops_per_token,achieved_flops,mfu,"
    "mfu_fp32,mfu_bf16,device"
).split(",")
SAFETY = 0.85
BUDGETS = ("auto", "compute", "tokens")
CONFIRM_S = 2 * 3600


def parse_dims(text: str) -> list[int]:
    try:
        dims = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise RagError(f"--dims must be comma-separated integers like 128,256,512, got {text!r}") from exc
    if not dims or min(dims) < 1:
        raise RagError(f"--dims must list positive integers, got {text!r}")
    return dims


def resolve_budget(budget: str, device: str | None = None) -> str:
    if budget not in BUDGETS:
        raise RagError(f"unknown --budget {budget!r}; use compute or tokens")
    if budget != "auto":
        return budget
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return "tokens" if device == "cuda" else "compute"


def measure_rates(base: TrainConfig, dims: list[int]) -> dict[int, float]:
    """Training tokens/s of each d on the training device: two warm-up steps, then the best of two timed ones."""
    import torch

    ids = prepare(base.corpus, base.model.vocab).ids["train"]
    rates = {}
    for d in dims:
        rt = choose(base.precision, "off", base.threads, d)
        model = rt.prepare_model(GPT(replace(base.model, dim=d)).to(rt.device))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        times = []
        for i in range(4):
            x, y = train_batch(ids, PROBE_STEP + i, base.batch, model.cfg.context, base.seed)
            if rt.device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            with rt.autocast():
                _, loss = model(x.to(rt.device), y.to(rt.device))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if rt.device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        rates[d] = base.batch * model.cfg.context * rt.world / min(times[2:])
        del model, opt, loss
        gc.collect()
        if rt.device == "cuda":
            torch.cuda.empty_cache()
    return rates


def sweep_budget(
    budget: str, minutes: float | None, flops: float | None, tokens: int | None, epochs: float | None
) -> tuple[str, float | None]:
    """The budget (--budget auto resolved on this device) and the minutes a compute budget is sized to (25 unless
    --minutes or --flops is given); refuses the options of the other budget."""
    mode = resolve_budget(budget)
    if mode == "tokens" and minutes is not None:
        raise RagError(
            "--minutes sizes a compute budget; with --budget tokens give --tokens or --epochs "
            "(or use --budget compute --minutes N)"
        )
    if mode == "compute" and (tokens is not None or epochs is not None):
        raise RagError(
            "--tokens/--epochs give a token budget; add --budget tokens, or use --minutes/--flops for a compute budget"
        )
    if mode == "compute" and minutes is None and flops is None:
        minutes = 25.0
    return mode, minutes


def eval_equivalent_s(base: TrainConfig, rate: float, slices: int) -> float:
    """Seconds of evaluation per d (a forward pass costs about a third of a training step)."""
    eval_tokens = 2 * (base.eval_tokens or 100_000) + slices * base.slice_eval_tokens
    return eval_tokens / 3 / rate


def plan_budget(base: TrainConfig, dims: list[int], budget: str, minutes: float | None, flops: float | None) -> dict:
    """The per-d steps of a sweep, and how they were chosen."""
    per_step = base.batch * base.model.context
    fpt = {d: flops_per_token(replace(base.model, dim=d))["train"] for d in dims}
    plan = {
        "dims": dims,
        "budget": budget,
        "minutes": minutes,
        "batch": base.batch,
        "context": base.model.context,
        "flops_per_token": {str(d): fpt[d] for d in dims},
    }
    rates = measure_rates(base, dims)  # also for the time estimate when the budget is given directly
    plan["probe_tokens_per_s"] = {str(d): round(r, 1) for d, r in rates.items()}
    if budget == "compute":
        if not flops:
            spare = SAFETY * minutes * 60 - sum(eval_equivalent_s(base, rates[d], base.slices) for d in dims)
            flops = max(1.0, spare) / sum(1 / (fpt[d] * rates[d]) for d in dims)
            plan["budget_rule"] = (
                f"compute-matched: every d gets the same training FLOPs, sized from the measured "
                f"throughput to fit {minutes:g} min (safety {SAFETY})"
            )
        else:
            plan["budget_rule"] = "compute-matched: every d gets the same training FLOPs (--flops given)"
        steps = {d: max(10, round(flops / fpt[d] / per_step)) for d in dims}
        plan["flops_per_d"] = flops
    else:
        if base.tokens:
            steps = {d: max(1, math.ceil(base.tokens / per_step)) for d in dims}
            plan["budget_rule"] = f"token-matched: every d sees {base.tokens:,} training tokens (--tokens)"
        else:
            epochs = base.epochs or 1.0
            n = len(prepare(base.corpus, base.model.vocab).ids["train"])
            steps = {d: max(1, math.ceil(epochs * n / per_step)) for d in dims}
            plan["budget_rule"] = f"token-matched: every d sees {epochs:g} epoch(s) of the train split"
        plan["epochs"] = base.epochs
    plan["steps"] = {str(d): steps[d] for d in dims}
    plan["tokens_per_d"] = {str(d): steps[d] * per_step for d in dims}
    if rates:
        plan["estimated_s"] = round(
            sum(steps[d] * per_step / rates[d] + eval_equivalent_s(base, rates[d], base.slices) for d in dims), 1
        )
    return plan


def check_out(out_dir: Path) -> None:
    """One-line errors for an --out that is a file, lies under a file, or cannot be written (creates nothing)."""
    import os

    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise RagError(f"--out {out_dir} is a file; give a folder")
    parent = out_dir
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise RagError(f"--out {out_dir} cannot be created: {parent} is a file; pick another folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise RagError(f"--out {out_dir} is not writable ({parent} denies writing); pick another folder")


def run_sweep(
    base: TrainConfig,
    dims: list[int],
    out: str,
    minutes: float | None = None,
    progress=None,
    on_result=None,
    budget: str = "auto",
    flops: float | None = None,
    confirm=None,
) -> dict:
    """Train every d (skipping finished ones when resuming); returns {'rows', 'plan', 'report'}.

    confirm(plan) is asked before training when the estimate exceeds two hours; False stops the sweep.
    """
    for d in dims:
        replace(base.model, dim=d).check()  # refuse a bad d before training anything
    out_dir = Path(out)
    plan_path = out_dir / "sweep.json"
    t_start = time.perf_counter()
    check_out(out_dir)
    created = False
    if base.resume and plan_path.exists():
        plan = read_json(plan_path, f"delete {out_dir} (or pick another --out) to start the sweep fresh")
        if plan.get("dims") != dims:
            raise RagError(
                f"--resume refused: {plan_path} was planned for d={plan.get('dims')}, not {dims}; "
                "use the same --dims or another --out"
            )
    else:
        if any((out_dir / f"d{d}" / "ckpt").exists() or (out_dir / f"d{d}" / "result.json").exists() for d in dims):
            raise RagError(f"{out_dir} already holds sweep runs; add --resume to continue or pick another --out")
        plan = plan_budget(base, dims, resolve_budget(budget), minutes, flops)
        if plan.get("estimated_s", 0) > CONFIRM_S and (confirm is None or not confirm(plan)):
            raise RagError(
                f"the sweep would take about {plan['estimated_s'] / 3600:.1f} h on this machine; "
                "add --yes to run it anyway, or lower the budget"
            )
        out_dir.mkdir(parents=True, exist_ok=True)
        plan_path.write_text(json.dumps(plan, indent=1))
        created = True
    rows = []
    try:
        for d in dims:
            run = out_dir / f"d{d}"
            if (run / "result.json").exists():
                rows.append(read_json(run / "result.json", f"delete {run} and resume the sweep with --resume"))
            else:
                steps = plan["steps"][str(d)]
                cfg = replace(
                    base,
                    model=replace(base.model, dim=d),
                    out=str(run),
                    tokens=steps * plan["batch"] * plan["context"],
                    epochs=None,
                    minutes=None,
                    resume=(run / "ckpt").exists(),
                )
                rows.append(train(cfg, progress=progress))
                gc.collect()
            if on_result:
                on_result(rows[-1])
    except BaseException:
        if created and not any((out_dir / f"d{d}" / "ckpt").exists() for d in dims):
            plan_path.unlink(missing_ok=True)  # nothing to resume: leave no stray plan
        raise
    plan["sweep_s"] = round(plan.get("sweep_s", 0) + time.perf_counter() - t_start, 1)
    plan_path.write_text(json.dumps(plan, indent=1))
    write_tables(rows, out_dir, plan)
    from rag.lm.report import write_report

    report = write_report(rows, out_dir, plan)
    return {"rows": rows, "plan": plan, "report": str(report)}


def write_tables(rows: list[dict], out_dir: Path, plan: dict) -> None:
    with open(out_dir / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    (out_dir / "results.json").write_text(json.dumps({"plan": plan, "rows": rows}, indent=1))


def load_sweep(out: str | Path) -> tuple[list[dict], dict]:
    """The finished rows and plan of a sweep folder (to redraw its report)."""
    out_dir = Path(out)
    if not (out_dir / "sweep.json").exists():
        raise RagError(f"{out_dir} holds no sweep (no sweep.json); run rag lm sweep --out {out_dir} first")
    plan = read_json(out_dir / "sweep.json", f"delete {out_dir} to start the sweep fresh")
    rows = [
        read_json(out_dir / f"d{d}" / "result.json", f"delete {out_dir / f'd{d}'} and resume the sweep")
        for d in plan["dims"]
        if (out_dir / f"d{d}" / "result.json").exists()
    ]
    if not rows:
        raise RagError(
            f"no d of the sweep in {out_dir} has finished yet; resume it with rag lm sweep --resume --out {out_dir}"
        )
    return rows, plan


def default_base(**kw) -> TrainConfig:
    return config_of(**kw)
