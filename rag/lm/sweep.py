"""The d-sweep: train one model per d with the same token budget, then write CSV, JSON and the report.

Budget: with --tokens every d gets exactly that many training tokens. Without it the sweep measures
each d's training throughput on this machine (one warm-up and one timed step), and gives every d
the same token budget B so that the whole sweep, evaluation included, fits `minutes`:
    B = safety * minutes*60 / sum_d(1/rate_d) - eval_equivalent_tokens
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
from rag.lm.data import PROBE_STEP, prepare, train_batch
from rag.lm.model import GPT, GPTConfig
from rag.lm.runtime import choose
from rag.lm.train import TrainConfig, train

COLUMNS = ("dim,layers,heads,vocab,tied,pos,params,embedding_params,position_params,embedding_share,bytes_fp32,"
           "bytes_fp16,train_mem_est_bytes,tokens_seen,val_loss,val_ppl,test_ppl,test_ppl_per_word,epoch_s,"
           "tokens_per_s,peak_mem_bytes,flops_per_token,achieved_flops,mfu,device").split(",")
SAFETY = 0.8


def parse_dims(text: str) -> list[int]:
    try:
        dims = [int(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise RagError(f"--dims must be comma-separated integers like 128,256,512, got {text!r}") from exc
    if not dims or min(dims) < 1:
        raise RagError(f"--dims must list positive integers, got {text!r}")
    return dims


def measure_rates(base: TrainConfig, dims: list[int]) -> dict[int, float]:
    """Training tokens/s of each d on this machine: one warm-up step, then one timed step."""
    import torch

    ids = prepare(base.corpus, base.model.vocab).ids["train"]
    rates = {}
    for d in dims:
        rt = choose(base.precision, "off", base.threads, d)
        model = rt.prepare_model(GPT(replace(base.model, dim=d)))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        seconds = 0.0
        for i in range(2):
            x, y = train_batch(ids, PROBE_STEP + i, base.batch, model.cfg.context, base.seed)
            t0 = time.perf_counter()
            with rt.autocast():
                _, loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            seconds = time.perf_counter() - t0
        rates[d] = base.batch * model.cfg.context / seconds
        del model, opt, loss
        gc.collect()
    return rates


def size_budget(rates: dict[int, float], minutes: float, base: TrainConfig) -> int:
    """Equal per-d token budget that fits the sweep in `minutes` (rounded to whole steps)."""
    per_step = base.batch * base.model.context
    eval_tokens = 2 * (base.eval_tokens or 100_000) + base.slices * base.slice_eval_tokens
    eval_equiv = eval_tokens / 3  # a forward pass costs about a third of a training step
    budget = SAFETY * minutes * 60 / sum(1 / r for r in rates.values()) - eval_equiv
    steps = max(10, int(budget // per_step))
    return steps * per_step


def run_sweep(base: TrainConfig, dims: list[int], out: str, minutes: float | None = 25.0, progress=None,
              on_result=None) -> dict:
    """Train every d (skipping finished ones when resuming); returns {'rows', 'budget', ...}."""
    for d in dims:
        replace(base.model, dim=d).check()  # refuse a bad d before training anything
    out_dir = Path(out)
    plan_path = out_dir / "sweep.json"
    t_start = time.perf_counter()
    if base.resume and plan_path.exists():
        plan = json.loads(plan_path.read_text())
    else:
        if not base.resume and any((out_dir / f"d{d}" / "ckpt").exists() for d in dims):
            raise RagError(f"{out_dir} already holds sweep runs; add --resume to continue or pick another --out")
        rates = measure_rates(base, dims) if not base.tokens and not base.epochs else {}
        tokens = base.tokens or (size_budget(rates, minutes, base) if rates else None)
        plan = {"dims": dims, "tokens_per_d": tokens, "epochs": base.epochs, "minutes": minutes,
                "probe_tokens_per_s": {str(k): round(v, 1) for k, v in rates.items()},
                "budget_rule": ("--tokens given" if base.tokens else "--epochs given" if base.epochs else
                                f"same tokens for every d, sized from the measured rates to fit {minutes} min "
                                f"(safety {SAFETY})")}
        out_dir.mkdir(parents=True, exist_ok=True)
        plan_path.write_text(json.dumps(plan, indent=1))
    rows = []
    for d in dims:
        run = out_dir / f"d{d}"
        if (run / "result.json").exists():
            rows.append(json.loads((run / "result.json").read_text()))
        else:
            cfg = replace(base, model=replace(base.model, dim=d), out=str(run), tokens=plan["tokens_per_d"],
                          epochs=None if plan["tokens_per_d"] else base.epochs, minutes=None,
                          resume=base.resume and (run / "ckpt").exists())
            rows.append(train(cfg, progress=progress))
            gc.collect()
        if on_result:
            on_result(rows[-1])
    plan["sweep_s"] = round(time.perf_counter() - t_start, 1)
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


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y against log x (y ~ x^k)."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    var = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / var if var else float("nan")


def default_base(**kw) -> TrainConfig:
    model_keys = set(GPTConfig.__dataclass_fields__)
    model = GPTConfig(**{k: v for k, v in kw.items() if k in model_keys})
    return TrainConfig(model=model, **{k: v for k, v in kw.items() if k not in model_keys})
