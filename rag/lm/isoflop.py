"""Iso-FLOP curves (Chinchilla's approach 2) over the embedding dimension d, and the token-matched curve.

A grid folder holds one run folder per (budget, d, seed, LR factor):
  grid.json                    the fixed settings (model shape rule, batch, precision, evaluation, LR rule)
  C1e+12/d64-s1337-x1/         a run (rag.lm.train layout) + provenance.json (how it was run)
  runs.csv, isoflop.json       every finished run, the fits and the provenance (rewritten after each run)
  isoflop.png, scaling.png, lr_check.png, summary.md
Budgets count training FLOPs (rag.lm.model.flops_per_token x tokens), so load from other processes changes
only the wall time, never a quality figure. Every run: one precision, warm-up a fixed fraction of its steps,
cosine decay, the best validation checkpoint scored on valid and test (the same targets as the n-gram baselines).
Token-matched mode (budgets given as tokens) adds early stopping on validation.

Heads: `heads` (8) while d/heads >= MIN_HEAD (8); below that width the head size stays 8 and the heads
shrink to d/8 (d=32: 4 heads, d=16: 2, d=8: 1); below d=8, one head of size d. A d that fits no rule is refused.
"""
from __future__ import annotations

import csv
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rag.config import RagError

MIN_HEAD = 8
LR_RULE = "2e-3*sqrt(128/d)"
GRID_KEYS = ("corpus", "vocab", "layers", "heads", "context", "batch", "precision", "eval_tokens", "slices",
             "slice_eval_tokens", "warmup_frac", "init", "patience", "mode")


def lr_rule(dim: int) -> float:
    """The peak learning rate rule checked by the LR scans (rag lm isoflop --lr-factors)."""
    return 2e-3 * math.sqrt(128 / dim)


def heads_for(dim: int, heads: int = 8) -> int:
    """heads while the head size is at least MIN_HEAD, else d/MIN_HEAD heads of size MIN_HEAD (below d=MIN_HEAD:
    one head of size d)."""
    if dim < 1 or heads < 1:
        raise RagError(f"d and heads must be positive, got d={dim}, heads={heads}")
    if dim // heads >= MIN_HEAD:
        if dim % heads:
            raise RagError(f"d={dim} is not divisible by heads={heads}; pick d a multiple of {heads}")
        return heads
    if dim < MIN_HEAD:
        return 1  # narrower than one head of MIN_HEAD: one head of size d
    if dim % MIN_HEAD:
        raise RagError(f"d={dim} is not divisible by heads={heads} with a head size of at least {MIN_HEAD} "
                       f"(below {heads * MIN_HEAD} the heads shrink to d/{MIN_HEAD}); pick d a multiple of {MIN_HEAD}")
    return dim // MIN_HEAD


def parse_budgets(text: str, what: str = "--budgets") -> list[float]:
    try:
        values = [float(x) for x in str(text).replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise RagError(f"{what} must be comma-separated numbers like 1e12,3e12,1e13, got {text!r}") from exc
    if not values:
        raise RagError(f"{what} is empty; give at least one value like 1e12")
    if any(not (v > 0) or math.isinf(v) for v in values):
        raise RagError(f"{what} must be positive and finite, got {text!r}")
    return values


def parse_list(text: str, what: str, kind=int, positive: bool = True) -> list:
    try:
        values = [kind(x) for x in str(text).replace(" ", "").split(",") if x]
    except ValueError as exc:
        raise RagError(f"{what} must be comma-separated {kind.__name__}s, got {text!r}") from exc
    if not values:
        raise RagError(f"{what} is empty; give at least one value")
    if positive and any(not (v > 0) for v in values):
        raise RagError(f"{what} must be positive, got {text!r}")
    return values


@dataclass
class GridSettings:
    corpus: str = "wiki-lm"
    vocab: int = 10000
    layers: int = 6
    heads: int = 8
    context: int = 128
    batch: int = 16
    precision: str = "fp32"
    eval_tokens: int = 32768        # final valid/test targets (the baselines score the same ones)
    slices: int = 8                 # validation points per run (best-checkpoint candidates)
    slice_eval_tokens: int = 8192
    warmup_frac: float = 0.1
    init: str = "gpt2"
    patience: int | None = None     # early stopping (token-matched mode)
    mode: str = "flops"             # flops: budgets are training FLOPs; tokens: budgets are training tokens

    def model(self, dim: int):
        from rag.lm.model import GPTConfig

        return GPTConfig(vocab=self.vocab, dim=dim, layers=self.layers, heads=heads_for(dim, self.heads),
                         context=self.context, init=self.init).check()


@dataclass
class RunSpec:
    budget: float
    dim: int
    seed: int = 1337
    factor: float = 1.0             # LR = factor x lr_rule(d)

    def name(self) -> str:
        return f"{budget_label(self.budget)}/d{self.dim}-s{self.seed}-x{self.factor:g}"


def budget_label(budget: float) -> str:
    mant, exp = f"{budget:.10e}".split("e")
    return f"C{mant.rstrip('0').rstrip('.')}e{int(exp)}"


def run_tokens(settings: GridSettings, spec: RunSpec) -> tuple[int, int]:
    """(steps, tokens) of a run: the FLOP budget over the training FLOPs per token, in whole steps."""
    from rag.lm.model import flops_per_token

    per_step = settings.batch * settings.context
    if settings.mode == "tokens":
        steps = max(1, round(spec.budget / per_step))
    else:
        fpt = flops_per_token(settings.model(spec.dim))["train"]
        steps = max(1, round(spec.budget / (fpt * per_step)))
    return steps, steps * per_step


def train_config(settings: GridSettings, spec: RunSpec, out: Path, threads: int | None):
    from rag.lm.train import TrainConfig

    _, tokens = run_tokens(settings, spec)
    return TrainConfig(corpus=settings.corpus, out=str(out / spec.name()), model=settings.model(spec.dim),
                       batch=settings.batch, tokens=tokens, lr=lr_rule(spec.dim) * spec.factor, seed=spec.seed,
                       slices=settings.slices, eval_tokens=settings.eval_tokens,
                       slice_eval_tokens=settings.slice_eval_tokens, threads=threads, precision=settings.precision,
                       compile="off", samples=0, warmup_frac=settings.warmup_frac, best_val=True,
                       patience=settings.patience, measure_peak=False)


def git_commit() -> str | None:
    """HEAD of the checkout the code runs from, with '-dirty' when its tracked files differ from it."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10,
                              check=False).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", str(here)], cwd=here,
                               capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("-dirty" if dirty else "")) or None


def precision_probe(dims: list[int], threads: int = 1, batch: int = 16, context: int = 128, vocab: int = 10000,
                    layers: int = 6, steps: int = 5, corpus: str = "wiki-lm") -> list[dict]:
    """Training tokens/s of fp32 and of bf16 autocast at each d, timed alternately (best of the last steps)."""
    import torch

    from rag.lm.data import PROBE_STEP, prepare, train_batch
    from rag.lm.model import GPT, GPTConfig, flops_per_token

    torch.set_num_threads(threads)
    ids = prepare(corpus, vocab).ids["train"]
    rows = []
    for d in dims:
        cfg = GPTConfig(vocab=vocab, dim=d, layers=layers, heads=heads_for(d), context=context)
        models = {p: GPT(cfg) for p in ("fp32", "bf16")}
        opts = {p: torch.optim.AdamW(m.parameters(), lr=1e-3) for p, m in models.items()}
        times = {p: [] for p in models}
        for i in range(steps):
            x, y = train_batch(ids, PROBE_STEP + i, batch, context, 0)
            for p, m in models.items():
                t0 = time.perf_counter()
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=p == "bf16"):
                    _, loss = m(x, y)
                loss.backward()
                opts[p].step()
                opts[p].zero_grad(set_to_none=True)
                times[p].append(time.perf_counter() - t0)
        fpt = flops_per_token(cfg)["train"]
        rate = {p: batch * context / min(t[2:] or t) for p, t in times.items()}
        rows.append({"dim": d, "heads": cfg.heads, "fp32_tokens_per_s": round(rate["fp32"]),
                     "bf16_tokens_per_s": round(rate["bf16"]), "bf16_speedup": round(rate["bf16"] / rate["fp32"], 2),
                     "fp32_gflops": round(fpt * rate["fp32"] / 1e9, 1), "threads": threads,
                     "loadavg": round(os.getloadavg()[0], 2)})
    return rows


def host_info() -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"host": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def run_one(job: dict) -> dict:
    """Train (or resume, or reuse) one run; writes provenance.json beside result.json. Runs in a worker process."""
    import torch

    settings, spec, out, threads = GridSettings(**job["settings"]), RunSpec(**job["spec"]), Path(job["out"]), job["threads"]
    run = out / spec.name()
    if (run / "result.json").exists():
        return {"name": spec.name(), "reused": True}
    from rag.lm.train import train

    cfg = train_config(settings, spec, out, threads)
    resumed = (run / "ckpt").exists()
    cfg = replace(cfg, resume=resumed)
    t0, start = time.perf_counter(), time.time()
    load0 = os.getloadavg()
    prior = json.loads((run / "provenance.json").read_text()) if resumed and (run / "provenance.json").exists() else {}
    train(cfg)
    prov = {"command": job["command"], "git_commit": job["commit"], **host_info(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "parallel": job["parallel"], "started": start, "finished": time.time(),
            "wall_s": round(time.perf_counter() - t0 + prior.get("wall_s", 0.0), 1),
            "loadavg_start": [round(x, 2) for x in load0], "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "resumed": resumed or bool(prior), "pid": os.getpid()}
    (run / "provenance.json").write_text(json.dumps(prov, indent=1))
    return {"name": spec.name(), "reused": False}


def _worker_init(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def check_grid(out: Path, settings: GridSettings) -> None:
    """A grid folder keeps one set of settings: a later call with other settings is refused (one line)."""
    path = out / "grid.json"
    if path.exists():
        saved = json.loads(path.read_text())
        diff = [f"{k}={saved.get(k)!r} (asked {getattr(settings, k)!r})" for k in GRID_KEYS
                if saved.get(k) != getattr(settings, k)]
        if diff:
            raise RagError(f"{out} holds a grid with other settings: {', '.join(diff)}; use the same options or another --out")
    else:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**asdict(settings), "lr_rule": LR_RULE, "min_head": MIN_HEAD}, indent=1))


def run_grid(settings: GridSettings, specs: list[RunSpec], out: str | Path, parallel: int = 1, threads: int = 1,
             on_done=None) -> dict:
    """Train every spec not yet finished (resuming killed ones), N at a time; rewrite the summary after each."""
    out = Path(out)
    for spec in specs:  # refuse a bad d or budget before training anything
        settings.model(spec.dim)
        if run_tokens(settings, spec)[0] < 2:
            raise RagError(f"budget {spec.budget:g} gives d={spec.dim} fewer than 2 steps of {settings.batch}x"
                           f"{settings.context} tokens; raise the budget or drop that d")
    check_grid(out, settings)
    common = {"settings": asdict(settings), "out": str(out), "threads": threads, "parallel": parallel,
              "command": " ".join(sys.argv), "commit": git_commit()}
    jobs = [{**common, "spec": asdict(s)} for s in specs if not (out / s.name() / "result.json").exists()]
    done = []
    if parallel <= 1 or len(jobs) <= 1:
        _worker_init(threads)
        for job in jobs:
            done.append(run_one(job))
            summarize(out)
            if on_done:
                on_done(done[-1])
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        os.environ.setdefault("OMP_NUM_THREADS", str(threads))
        with ProcessPoolExecutor(parallel, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                                 initargs=(threads,)) as pool:
            futures = [pool.submit(run_one, job) for job in jobs]
            for fut in as_completed(futures):
                done.append(fut.result())
                summarize(out)
                if on_done:
                    on_done(done[-1])
    return summarize(out)


# ------------------------------------------------------------------ collecting and fitting

def collect(out: str | Path) -> list[dict]:
    """One row per finished run in a grid folder."""
    out = Path(out)
    rows = []
    for res in sorted(out.glob("C*/d*-s*-x*/result.json")):
        run = res.parent
        r = json.loads(res.read_text())
        _, s, x = run.name[1:].split("-")
        prov = json.loads((run / "provenance.json").read_text()) if (run / "provenance.json").exists() else {}
        budget = float(run.parent.name[1:])
        rows.append({"budget": budget, "dim": r["dim"], "heads": r["heads"], "seed": int(s[1:]), "factor": float(x[1:]),
                     "lr": r["lr"], "params": r["params"], "tokens": r["tokens_seen"], "train_flops": r["train_flops"],
                     "steps": r["steps"], "total_steps": r.get("total_steps"), "warmup_steps": r["warmup_steps"],
                     "best_step": r.get("best_step"), "stopped_early_at": r.get("stopped_early_at"),
                     "val_loss": r["val_loss"], "test_loss": r["test_loss"], "val_bpb": r["val_bpb"],
                     "test_bpb": r["test_bpb"], "test_ppl": r["test_ppl"], "precision": r.get("precision"),
                     "train_s": r["train_s"], "wall_s": prov.get("wall_s"), "threads": prov.get("threads"),
                     "parallel": prov.get("parallel"), "resumed": prov.get("resumed"),
                     "loadavg_start": (prov.get("loadavg_start") or [None])[0],
                     "loadavg_end": (prov.get("loadavg_end") or [None])[0], "run": f"{run.parent.name}/{run.name}"})
    return rows


def fit_parabola(ds: list[float], ys: list[float], sigma: list[float] | None = None, level: float = 0.95) -> dict:
    """y = a + b·x + c·x², x = ln d, by (weighted) least squares; the vertex d* = exp(-b/2c) and min y.

    Intervals from the coefficient covariance by the delta method with a Student t quantile (residual variance
    from the fit, n-3 degrees of freedom; with sigma given and n = 3, sigma alone), reported as
    d* x/÷ exp(t·se(ln d*)) and y* ± t·se(y*).
    """
    import numpy as np
    from scipy import stats

    x, y = np.log(np.asarray(ds, float)), np.asarray(ys, float)
    n = len(x)
    if n < 3:
        return {"ok": False, "why": f"{n} points (a parabola needs 3)"}
    w = np.ones(n) if sigma is None else 1 / np.maximum(np.asarray(sigma, float), 1e-6) ** 2
    X = np.stack([np.ones(n), x, x * x], axis=1)
    W = np.diag(w)
    A = X.T @ W @ X
    coef = np.linalg.solve(A, X.T @ W @ y)
    resid = y - X @ coef
    dof = n - 3
    if dof > 0:
        s2 = float(resid @ W @ resid) / dof
        if sigma is not None:
            s2 = max(s2, 1.0)  # never narrower than the seed noise says
    else:
        s2 = 1.0 if sigma is not None else float("nan")
    cov = s2 * np.linalg.inv(A)
    a, b, c = coef
    out = {"ok": bool(c > 0), "n": n, "dof": dof, "coef": [float(a), float(b), float(c)], "cov": cov.tolist(),
           "rmse": float(np.sqrt(np.mean(resid ** 2)))}
    if c <= 0:
        out["why"] = "the fitted parabola opens downwards: no minimum"
        return out
    xs = -b / (2 * c)
    ymin = a - b * b / (4 * c)
    g_x = np.array([0, -1 / (2 * c), b / (2 * c * c)])
    g_y = np.array([1, -b / (2 * c), b * b / (4 * c * c)])
    se_x, se_y = float(np.sqrt(g_x @ cov @ g_x)), float(np.sqrt(g_y @ cov @ g_y))
    t = float(stats.t.ppf(0.5 + level / 2, dof)) if dof > 0 else float(stats.norm.ppf(0.5 + level / 2))
    inside = bool(min(x) < xs < max(x))
    below = int((x < xs).sum())
    above = int((x > xs).sum())
    out.update({"d_opt": float(math.exp(xs)), "ln_d_opt": float(xs), "se_ln_d": se_x,
                "d_lo": float(math.exp(xs - t * se_x)), "d_hi": float(math.exp(xs + t * se_x)),
                "y_opt": float(ymin), "se_y": se_y, "y_lo": float(ymin - t * se_y), "y_hi": float(ymin + t * se_y),
                "t": t, "level": level, "inside_grid": inside, "points_below": below, "points_above": above,
                "bracketed": below >= 2 and above >= 2})
    return out


def fit_power(cs: list[float], ys: list[float], se_ln: list[float], draws: int = 4000, seed: int = 0) -> dict:
    """ln y = ln A + k·ln C by least squares; interval of k and A from draws of ln y ~ N(ln y, se_ln) per point
    (the per-budget fit intervals), combined with the fit's own residual scatter where there are spare points."""
    import numpy as np

    lc, ly, se = np.log(np.asarray(cs, float)), np.log(np.asarray(ys, float)), np.asarray(se_ln, float)
    if len(lc) < 2:
        return {"ok": False, "why": "fewer than 2 budgets with a fitted optimum"}
    k, lnA = np.polyfit(lc, ly, 1)
    rng = np.random.default_rng(seed)
    resid = ly - (lnA + k * lc)
    extra = float(np.sqrt(np.sum(resid ** 2) / (len(lc) - 2))) if len(lc) > 2 else 0.0
    noise = np.sqrt(se ** 2 + extra ** 2)
    ks = np.array([np.polyfit(lc, ly + rng.normal(0, noise), 1)[0] for _ in range(draws)])
    return {"ok": True, "k": float(k), "A": float(np.exp(lnA)), "k_lo": float(np.percentile(ks, 2.5)),
            "k_hi": float(np.percentile(ks, 97.5)), "residual_sd_ln": extra, "n": len(lc),
            "formula": "y = A * C^k", "interval": "95% of 4000 draws of each point within its interval"}


FIT_WINDOW = 3  # the parabola is fitted to the best measured d and up to this many grid neighbours on each side


def grid_fits(rows: list[dict]) -> dict:
    """Per budget: parabola fits of validation and test bits per byte against ln d (default LR runs; several
    seeds averaged, their spread as weights) over the best measured d and up to FIT_WINDOW neighbours on each
    side (a parabola in ln d describes the bottom of the curve, not its far flanks); then d_opt(C) and loss(C)
    power laws over the budgets whose optimum is bracketed."""
    import numpy as np

    per_budget = {}
    for budget in sorted({r["budget"] for r in rows}):
        mine = [r for r in rows if r["budget"] == budget and r["factor"] == 1.0]
        dims = sorted({r["dim"] for r in mine})
        pts = []
        for d in dims:
            seeds = [r for r in mine if r["dim"] == d]
            v = np.array([r["val_bpb"] for r in seeds])
            t = np.array([r["test_bpb"] for r in seeds])
            pts.append({"dim": d, "n_seeds": len(seeds), "val_bpb": float(v.mean()), "test_bpb": float(t.mean()),
                        "val_sd": float(v.std(ddof=1)) if len(v) > 1 else None,
                        "test_sd": float(t.std(ddof=1)) if len(t) > 1 else None,
                        "tokens": seeds[0]["tokens"], "params": seeds[0]["params"],
                        "train_flops": seeds[0]["train_flops"]})
        entry = {"budget": budget, "points": pts}
        if pts:
            i = min(range(len(pts)), key=lambda j: pts[j]["val_bpb"])
            window = pts[max(0, i - FIT_WINDOW):i + FIT_WINDOW + 1]
            for p in pts:
                p["in_fit"] = p in window
            pts_all, pts = pts, window
        if len(pts) >= 3:
            # seed noise: where several seeds exist, one pooled sd for every point (sd of a mean: / sqrt(n))
            sds = [p["val_sd"] for p in pts if p["val_sd"] is not None]
            pooled = float(np.sqrt(np.mean(np.square(sds)))) if sds else None
            sigma = [pooled / math.sqrt(p["n_seeds"]) for p in pts] if pooled else None
            entry["seed_sd_val_bpb"] = pooled
            entry["val"] = fit_parabola([p["dim"] for p in pts], [p["val_bpb"] for p in pts], sigma)
            tsds = [p["test_sd"] for p in pts if p["test_sd"] is not None]
            tpooled = float(np.sqrt(np.mean(np.square(tsds)))) if tsds else None
            tsigma = [tpooled / math.sqrt(p["n_seeds"]) for p in pts] if tpooled else None
            entry["test"] = fit_parabola([p["dim"] for p in pts], [p["test_bpb"] for p in pts], tsigma)
            best = min(pts, key=lambda p: p["val_bpb"])
            entry["best_measured"] = best
        if pts:
            entry["points"] = pts_all
        per_budget[f"{budget:g}"] = entry
    fitted = [e for e in per_budget.values() if e.get("val", {}).get("ok") and e["val"]["bracketed"]]
    scaling = {}
    if len(fitted) >= 2:
        cs = [e["budget"] for e in fitted]
        scaling["d_opt"] = fit_power(cs, [e["val"]["d_opt"] for e in fitted], [e["val"]["se_ln_d"] for e in fitted])
        scaling["val_bpb"] = fit_power(cs, [e["val"]["y_opt"] for e in fitted],
                                       [e["val"]["se_y"] / e["val"]["y_opt"] for e in fitted])
        tfit = [e for e in fitted if e.get("test", {}).get("ok")]
        if len(tfit) >= 2:
            scaling["test_bpb"] = fit_power([e["budget"] for e in tfit], [e["test"]["y_opt"] for e in tfit],
                                            [e["test"]["se_y"] / e["test"]["y_opt"] for e in tfit])
    return {"budgets": per_budget, "scaling": scaling}


def lr_table(rows: list[dict]) -> list[dict]:
    """The LR check: every (budget, d) scanned at >= 3 factors; is the rule (x1) the best, and by how much not."""
    table = []
    for budget, d in sorted({(r["budget"], r["dim"]) for r in rows if r["factor"] != 1.0}):
        mine = [r for r in rows if r["budget"] == budget and r["dim"] == d and r["seed"] == min(
            x["seed"] for x in rows if x["budget"] == budget and x["dim"] == d)]
        mine.sort(key=lambda r: r["factor"])
        best = min(mine, key=lambda r: r["val_bpb"])
        rule = next((r for r in mine if r["factor"] == 1.0), None)
        table.append({"budget": budget, "dim": d, "factors": [r["factor"] for r in mine],
                      "lrs": [r["lr"] for r in mine], "val_bpb": [r["val_bpb"] for r in mine],
                      "best_factor": best["factor"], "best_val_bpb": best["val_bpb"],
                      "rule_val_bpb": rule["val_bpb"] if rule else None,
                      "rule_gap_bpb": round(rule["val_bpb"] - best["val_bpb"], 4) if rule else None,
                      "best_at_edge": best["factor"] in (mine[0]["factor"], mine[-1]["factor"]) and len(mine) > 1})
    return table


# ------------------------------------------------------------------ writing

RUN_COLUMNS = ("budget", "dim", "heads", "seed", "factor", "lr", "params", "tokens", "train_flops", "steps", "total_steps",
               "warmup_steps", "best_step", "stopped_early_at", "val_loss", "test_loss", "val_bpb", "test_bpb",
               "test_ppl", "precision", "train_s", "wall_s", "threads", "parallel", "resumed", "loadavg_start",
               "loadavg_end", "run")


def summarize(out: str | Path, baselines: dict | None = None) -> dict:
    """runs.csv, isoflop.json (rows, fits, LR table, settings, provenance), plots and summary.md of a grid folder."""
    out = Path(out)
    rows = collect(out)
    settings = json.loads((out / "grid.json").read_text()) if (out / "grid.json").exists() else {}
    with open(out / "runs.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=RUN_COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    if baselines is None and (out / "baselines.json").exists():
        baselines = json.loads((out / "baselines.json").read_text())
    fits = grid_fits(rows) if settings.get("mode", "flops") == "flops" else {}
    data = {"settings": settings, "rows": rows, "fits": fits, "lr_check": lr_table(rows), "baselines": baselines,
            "wall_s_total": round(sum(r["wall_s"] or 0 for r in rows), 1)}
    (out / "isoflop.json").write_text(json.dumps(data, indent=1))
    if rows:
        from rag.lm.isoflop_plots import plot_grid

        plot_grid(data, out)
    return data
