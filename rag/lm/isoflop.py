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
from rag.lm.isoflop_summary import summarize

MIN_HEAD = 8
LR_RULE = "2e-3*sqrt(128/d)"
GRID_KEYS = (
    "corpus",
    "vocab",
    "layers",
    "heads",
    "context",
    "batch",
    "precision",
    "eval_tokens",
    "slices",
    "slice_eval_tokens",
    "warmup_frac",
    "init",
    "patience",
    "mode",
)


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
        raise RagError(
            f"d={dim} is not divisible by heads={heads} with a head size of at least {MIN_HEAD} "
            f"(below {heads * MIN_HEAD} the heads shrink to d/{MIN_HEAD}); pick d a multiple of {MIN_HEAD}"
        )
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
    eval_tokens: int = 32768  # final valid/test targets (the baselines score the same ones)
    slices: int = 8  # validation points per run (best-checkpoint candidates)
    slice_eval_tokens: int = 8192
    warmup_frac: float = 0.1
    init: str = "gpt2"
    patience: int | None = None  # early stopping (token-matched mode)
    mode: str = "flops"  # flops: budgets are training FLOPs; tokens: budgets are training tokens

    def model(self, dim: int):
        from rag.lm.model import GPTConfig

        return GPTConfig(
            vocab=self.vocab,
            dim=dim,
            layers=self.layers,
            heads=heads_for(dim, self.heads),
            context=self.context,
            init=self.init,
        ).check()


def grid_settings(
    corpus, vocab, layers, heads, context, batch, precision, eval_tokens, slices, mode, patience=None
) -> GridSettings:
    """The CLI's grid options checked: one precision for every d (no per-d 'auto')."""
    from rag.lm.runtime import PRECISIONS

    if precision not in PRECISIONS or precision == "auto":
        raise RagError(
            f"--precision must be one of fp32, bf16, bf16-head (one precision for every d), got {precision!r}"
        )
    return GridSettings(
        corpus=corpus,
        vocab=vocab,
        layers=layers,
        heads=heads,
        context=context,
        batch=batch,
        precision=precision,
        eval_tokens=eval_tokens,
        slices=slices,
        mode=mode,
        patience=patience,
        slice_eval_tokens=min(8192, eval_tokens),
    )


@dataclass
class RunSpec:
    budget: float
    dim: int
    seed: int = 1337
    factor: float = 1.0  # LR = factor x lr_rule(d)

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
    return TrainConfig(
        corpus=settings.corpus,
        out=str(out / spec.name()),
        model=settings.model(spec.dim),
        batch=settings.batch,
        tokens=tokens,
        lr=lr_rule(spec.dim) * spec.factor,
        seed=spec.seed,
        slices=settings.slices,
        eval_tokens=settings.eval_tokens,
        slice_eval_tokens=settings.slice_eval_tokens,
        threads=threads,
        precision=settings.precision,
        compile="off",
        samples=0,
        warmup_frac=settings.warmup_frac,
        best_val=True,
        patience=settings.patience,
        measure_peak=False,
    )


def git_commit() -> str | None:
    """HEAD of the checkout the code runs from, with '-dirty' when its tracked files differ from it."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10, check=False
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", str(here)],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("-dirty" if dirty else "")) or None


def precision_probe(
    dims: list[int],
    threads: int = 1,
    batch: int = 16,
    context: int = 128,
    vocab: int = 10000,
    layers: int = 6,
    steps: int = 5,
    corpus: str = "wiki-lm",
    out: str | None = None,
) -> list[dict]:
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
        rows.append(
            {
                "dim": d,
                "heads": cfg.heads,
                "fp32_tokens_per_s": round(rate["fp32"]),
                "bf16_tokens_per_s": round(rate["bf16"]),
                "bf16_speedup": round(rate["bf16"] / rate["fp32"], 2),
                "fp32_gflops": round(fpt * rate["fp32"] / 1e9, 1),
                "threads": threads,
                "loadavg": round(os.getloadavg()[0], 2),
            }
        )
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
    return rows


def probe_line(r: dict) -> str:
    return (
        f"d={r['dim']} ({r['heads']} heads): fp32 {r['fp32_tokens_per_s']} tok/s, bf16 autocast "
        f"{r['bf16_tokens_per_s']} tok/s ({r['bf16_speedup']}x), load {r['loadavg']}"
    )


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


def other_grid_processes() -> int:
    """How many other `lm isoflop` / `lm token-curve` commands run on this machine now (read from /proc)."""
    mine, n = {os.getpid(), os.getppid()}, 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if (b"lm\0isoflop" in cmd or b"lm\0token-curve" in cmd) and int(proc.name) not in mine:
            n += 1
    return n


def run_one(job: dict) -> dict:
    """Train (or resume, or reuse) one run; writes provenance.json beside result.json. Runs in a worker process."""
    import torch

    settings, spec, out, threads = (
        GridSettings(**job["settings"]),
        RunSpec(**job["spec"]),
        Path(job["out"]),
        job["threads"],
    )
    run = out / spec.name()
    if (run / "result.json").exists():
        return {"name": spec.name(), "reused": True}
    from rag.lm.train import train

    cfg = train_config(settings, spec, out, threads)
    resumed = (run / "ckpt").exists()
    cfg = replace(cfg, resume=resumed)
    t0, start = time.perf_counter(), time.time()
    load0, others = os.getloadavg(), other_grid_processes()
    prior = json.loads((run / "provenance.json").read_text()) if resumed and (run / "provenance.json").exists() else {}
    train(cfg)
    prov = {
        "command": job["command"],
        "git_commit": job["commit"],
        **host_info(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "parallel": job["parallel"],
        "started": start,
        "finished": time.time(),
        "wall_s": round(time.perf_counter() - t0 + prior.get("wall_s", 0.0), 1),
        "loadavg_start": [round(x, 2) for x in load0],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "resumed": resumed or bool(prior),
        "pid": os.getpid(),
        "other_grid_processes": others,
    }
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
        diff = [
            f"{k}={saved.get(k)!r} (asked {getattr(settings, k)!r})"
            for k in GRID_KEYS
            if saved.get(k) != getattr(settings, k)
        ]
        if diff:
            raise RagError(
                f"{out} holds a grid with other settings: {', '.join(diff)}; use the same options or another --out"
            )
    else:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**asdict(settings), "lr_rule": LR_RULE, "min_head": MIN_HEAD}, indent=1))


def specs_for(budgets: list[float], dims: list[int], seeds: list[int], factors: list[float]) -> list[RunSpec]:
    """Every (budget, d, seed, LR factor) combination, in that order (budgets outermost)."""
    return [RunSpec(b, d, s, f) for b in budgets for d in dims for s in seeds for f in factors]


def run_study(
    settings: GridSettings,
    budgets: list[float],
    dims: str,
    seeds: str,
    factors: str,
    out: str,
    parallel: int = 1,
    threads: int = 1,
    kn_orders: str = "3,4",
    on_done=None,
) -> dict:
    """Train every missing run of the grid the option lists name (finished runs are reused), then summarise the folder
    with the Kneser-Ney baselines of kn_orders on the same targets ('' for none)."""
    from rag.lm.kn import grid_baselines
    from rag.lm.sweep import check_out

    specs = specs_for(
        budgets,
        parse_list(dims, "--dims"),
        parse_list(seeds, "--seeds", positive=False),
        parse_list(factors, "--lr-factors", float),
    )
    check_out(Path(out))
    run_grid(settings, specs, out, parallel=parallel, threads=threads, on_done=on_done)
    base = grid_baselines(settings, Path(out), parse_list(kn_orders, "--kn-orders")) if kn_orders else None
    return summarize(out, base)


def run_grid(
    settings: GridSettings, specs: list[RunSpec], out: str | Path, parallel: int = 1, threads: int = 1, on_done=None
) -> dict:
    """Train every spec not yet finished (resuming killed ones), N at a time; rewrite the summary after each."""
    out = Path(out)
    for spec in specs:  # refuse a bad d or budget before training anything
        settings.model(spec.dim)
        if run_tokens(settings, spec)[0] < 2:
            raise RagError(
                f"budget {spec.budget:g} gives d={spec.dim} fewer than 2 steps of {settings.batch}x"
                f"{settings.context} tokens; raise the budget or drop that d"
            )
    check_grid(out, settings)
    common = {
        "settings": asdict(settings),
        "out": str(out),
        "threads": threads,
        "parallel": parallel,
        "command": " ".join(sys.argv),
        "commit": git_commit(),
    }
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
        with ProcessPoolExecutor(
            parallel, mp_context=mp.get_context("spawn"), initializer=_worker_init, initargs=(threads,)
        ) as pool:
            futures = [pool.submit(run_one, job) for job in jobs]
            for fut in as_completed(futures):
                done.append(fut.result())
                summarize(out)
                if on_done:
                    on_done(done[-1])
    return summarize(out)
