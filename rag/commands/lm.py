"""`rag lm train|sweep|info|bench`: train small GPTs at several embedding dimensions d and compare.

Also runnable as `torchrun --nproc_per_node=2 -m rag.commands.lm train ...` for DDP.
"""

from __future__ import annotations

from contextlib import contextmanager

import typer

from rag.commands.common import console, err_console, handle_errors, print_json

app = typer.Typer(
    help="Train GPT language models at several embedding dimensions d (the d-sweep).", no_args_is_help=True
)

CORPUS_HELP = (
    "wiki-lm (in RAG_DATA_DIR), wikitext-2 (downloaded if missing), or a folder with wiki.{train,valid,test}.raw"
)


@contextmanager
def training_bars(enabled: bool = True):
    """Yield a progress(event) callback drawing one rich bar per d with loss and tokens/s."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("loss {task.fields[loss]:.3f} · {task.fields[rate]:.0f} tok/s"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
    )
    tasks: dict[int, int] = {}

    def update(event: dict) -> None:
        d = event["dim"]
        if d not in tasks:
            if not tasks:
                bar.start()
            tasks[d] = bar.add_task(f"d={d}", total=event["total"], loss=float("nan"), rate=0.0)
        bar.update(tasks[d], completed=event["step"], loss=event["loss"], rate=event["tokens_per_s"])

    try:
        yield update
    finally:
        if tasks:
            bar.stop()


def _base(
    corpus,
    dim,
    layers,
    heads,
    vocab,
    context,
    tie,
    pos,
    epochs,
    tokens,
    minutes,
    batch,
    lr,
    seed,
    threads,
    precision,
    compile,
    eval_tokens,
    resume,
    out,
    slices=4,
    init="gpt2",
):
    from rag.config import RagError
    from rag.lm.sweep import default_base

    for name, value in (("--epochs", epochs), ("--minutes", minutes), ("--lr", lr)):
        if value is not None and not value > 0:
            raise RagError(f"{name} must be greater than 0, got {value:g}")
    return default_base(
        corpus=corpus,
        dim=dim,
        layers=layers,
        heads=heads,
        vocab=vocab,
        context=context,
        tie=tie,
        pos=pos,
        epochs=epochs,
        tokens=tokens,
        minutes=minutes,
        batch=batch,
        lr=lr,
        seed=seed,
        threads=threads,
        precision=precision,
        compile=compile,
        init=init,
        eval_tokens=eval_tokens or None,
        resume=resume,
        out=out,
        slices=slices,
    )


def _row_line(r: dict) -> str:
    b = r.get("baselines", {})
    base = (
        (
            f"; baselines test ppl: unigram {b['unigram']['test_ppl']:.0f}, bigram {b['bigram']['test_ppl']:.1f}, "
            f"trigram {b['trigram']['test_ppl']:.1f}"
        )
        if b
        else ""
    )
    bf16 = f", {100 * r['mfu_bf16']:.1f}% of bf16 peak" if r.get("mfu_bf16") is not None else ""
    return (
        f"d={r['dim']}: params {r['params']:,} (embedding {r['embedding_params']:,}), {r['tokens_seen']:,} tokens, "
        f"val ppl {r['val_ppl']:.2f}, test ppl {r['test_ppl']:.2f} ({r['test_bpb']:.3f} bits/byte){base}; "
        f"{r['tokens_per_s']:.0f} tok/s, peak mem {r['peak_mem_bytes'] / 2**20:.0f} MiB, "
        f"MFU {100 * r['mfu_fp32']:.1f}% of fp32 peak{bf16}"
    )


def _positive_out(out: str) -> str:
    from pathlib import Path

    from rag.config import RagError

    if Path(out).exists() and not Path(out).is_dir():
        raise RagError(f"--out {out} is a file; give a folder")
    return out


TOKENS_HELP = "Training token budget (token-matched)."
PRECISION_HELP = "auto (GPU: bf16; AMX CPU: bf16 from d=256, bf16 head below), fp32, bf16, bf16-head."
INIT_HELP = "gpt2: weights ~ N(0, 0.02); scaled: N(0, 1/sqrt(d))."


@app.command("train")
@handle_errors
def train_cmd(
    corpus: str = typer.Option("wiki-lm", help=CORPUS_HELP),
    dim: int = typer.Option(256, min=1, help="Embedding dimension d."),
    layers: int = typer.Option(6, min=1),
    heads: int = typer.Option(8, min=1),
    vocab: int = typer.Option(10000, min=257, max=65535, help="BPE vocabulary size V."),
    context: int = typer.Option(128, min=2, help="Context length T."),
    tie: bool = typer.Option(True, "--tie/--no-tie", help="Tie the output head to the input embedding."),
    pos: str = typer.Option("learned", help="learned, sinusoidal or rope."),
    init: str = typer.Option("gpt2", help=INIT_HELP),
    epochs: float = typer.Option(None, help="Passes over the train split (default 1 if no budget is given)."),
    tokens: int = typer.Option(None, min=1, help=TOKENS_HELP),
    minutes: float = typer.Option(None, help="Time budget (converted to steps from a measured rate)."),
    batch: int = typer.Option(16, min=1),
    lr: float = typer.Option(None, help="Peak LR (default 2e-3·sqrt(128/d))."),
    seed: int = typer.Option(1337),
    threads: int = typer.Option(None, min=1, help="torch threads (default: all)."),
    precision: str = typer.Option("auto", help=PRECISION_HELP),
    compile: str = typer.Option("auto", help="torch.compile: auto (GPU only), on, off."),
    eval_tokens: int = typer.Option(32768, min=0, help="Valid/test tokens scored at the end (0: whole split)."),
    slices: int = typer.Option(4, min=1, help="Checkpoints per run (at least one per epoch)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the run in --out after a kill."),
    out: str = typer.Option(..., help="Run directory (checkpoints, curve, result.json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result row as JSON."),
):
    """Train one model and print its figures next to the unigram/bigram/trigram baselines."""
    from rag.lm.sweep import check_out
    from rag.lm.train import train

    cfg = _base(
        corpus,
        dim,
        layers,
        heads,
        vocab,
        context,
        tie,
        pos,
        epochs,
        tokens,
        minutes,
        batch,
        lr,
        seed,
        threads,
        precision,
        compile,
        eval_tokens,
        resume,
        _positive_out(out),
        slices,
        init,
    )
    import os
    from pathlib import Path

    main_rank = int(os.environ.get("RANK", 0)) == 0  # under torchrun only rank 0 talks
    if main_rank:
        cfg.model.check()
        check_out(Path(out))
    with training_bars(not as_json and main_rank) as progress:
        result = train(cfg, progress=progress)
    if not main_rank:
        return
    if as_json:
        return print_json(result)
    console.print(_row_line(result))
    for s in result.get("samples", []):
        console.print(f"  [dim]sample:[/] {s}", highlight=False)
    console.print(f"run directory: {out}")


@app.command("sweep")
@handle_errors
def sweep_cmd(
    corpus: str = typer.Option("wiki-lm", help=CORPUS_HELP),
    dims: str = typer.Option("128,256,512,1024", help="Comma-separated list of d."),
    layers: int = typer.Option(6, min=1),
    heads: int = typer.Option(8, min=1),
    vocab: int = typer.Option(10000, min=257, max=65535),
    context: int = typer.Option(128, min=2),
    tie: bool = typer.Option(True, "--tie/--no-tie"),
    pos: str = typer.Option("learned"),
    init: str = typer.Option("gpt2", help=INIT_HELP),
    budget: str = typer.Option(
        "auto",
        help="compute (same training FLOPs per d; default on CPU) or "
        "tokens (same tokens/epochs per d; default on GPU).",
    ),
    minutes: float = typer.Option(
        None, help="compute budget: size the FLOPs per d so the sweep fits this (default 25)."
    ),
    flops: float = typer.Option(None, min=1, help="compute budget: training FLOPs per d, given directly."),
    epochs: float = typer.Option(None, help="tokens budget: passes over the train split for every d (default 1)."),
    tokens: int = typer.Option(None, min=1, help="tokens budget: training tokens for every d."),
    batch: int = typer.Option(16, min=1),
    lr: float = typer.Option(None, help="Peak LR (default 2e-3·sqrt(128/d))."),
    seed: int = typer.Option(1337),
    threads: int = typer.Option(None, min=1),
    precision: str = typer.Option("auto", help=PRECISION_HELP),
    compile: str = typer.Option("auto"),
    eval_tokens: int = typer.Option(16384, min=0, help="Valid/test tokens scored per d (0: whole split)."),
    slices: int = typer.Option(8, min=1, help="Validation points (and checkpoints) per d."),
    resume: bool = typer.Option(False, "--resume", help="Skip finished d, resume the interrupted one."),
    yes: bool = typer.Option(False, "--yes", help="Run even if the estimate exceeds two hours."),
    out: str = typer.Option("results/lm", help="Sweep directory (one run folder per d)."),
    as_json: bool = typer.Option(False, "--json"),
    to_convergence: bool = typer.Option(
        False,
        "--to-convergence",
        help="Train each d until validation stops improving: cosine over --max-epochs, whole-split validation every "
        "--eval-every epoch, early stopping after --patience, the best checkpoint scored on the whole test split.",
    ),
    max_epochs: float = typer.Option(12.0, help="--to-convergence: the epoch cap (the cosine schedule's length)."),
    eval_every: float = typer.Option(0.5, help="--to-convergence: validate every this fraction of an epoch."),
    patience: int = typer.Option(3, help="--to-convergence: validations without improvement before stopping."),
    dropout: float = typer.Option(None, help="--to-convergence: dropout (default: the preset of each width)."),
    weight_decay: float = typer.Option(None, help="--to-convergence: AdamW weight decay (default: the preset)."),
):
    """Train every d under one budget; write results.csv/json, report.md and PNGs, baselines included."""
    from rag.config import RagError
    from rag.lm.stats import budget_title
    from rag.lm.sweep import parse_dims, resolve_budget, run_sweep

    if to_convergence:
        return _converge(
            corpus, dims, layers, heads, vocab, context, tie, pos, init, batch, lr, seed, threads, precision,
            compile, resume, out, as_json, max_epochs, eval_every, patience, dropout, weight_decay,
        )  # fmt: skip
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
    dim_list = parse_dims(dims)
    cfg = _base(
        corpus,
        dim_list[0],
        layers,
        heads,
        vocab,
        context,
        tie,
        pos,
        epochs,
        tokens,
        minutes,
        batch,
        lr,
        seed,
        threads,
        precision,
        compile,
        eval_tokens,
        resume,
        _positive_out(out),
        slices,
        init,
    )

    def confirm(plan: dict) -> bool:
        err_console.print(f"estimated time: {plan['estimated_s'] / 3600:.1f} h ({plan['budget_rule']})")
        return yes

    with training_bars(not as_json) as progress:
        summary = run_sweep(
            cfg,
            dim_list,
            out,
            minutes=minutes,
            progress=progress,
            budget=mode,
            flops=flops,
            confirm=confirm,
            on_result=None if as_json else lambda r: console.print(_row_line(r)),
        )
    if as_json:
        return print_json(summary)
    console.print(
        f"{budget_title(summary['plan'])}; sweep took {summary['plan']['sweep_s'] / 60:.1f} min; "
        f"report: {summary['report']}"
    )


def _converge(
    corpus, dims, layers, heads, vocab, context, tie, pos, init, batch, lr, seed, threads, precision, compile,
    resume, out, as_json, max_epochs, eval_every, patience, dropout, weight_decay,
):  # fmt: skip
    from rag.config import RagError
    from rag.lm.converge import ConvergeSettings, run_convergence
    from rag.lm.sweep import parse_dims

    if lr is not None and not lr > 0:
        raise RagError(f"--lr must be greater than 0, got {lr:g}")
    settings = ConvergeSettings(max_epochs, eval_every, patience, dropout, weight_decay).check()
    dim_list = parse_dims(dims)
    cfg = _base(
        corpus, dim_list[0], layers, heads, vocab, context, tie, pos, max_epochs, None, None, batch, lr, seed,
        threads, precision, compile, 0, resume, _positive_out(out), 4, init,
    )  # fmt: skip
    cfg.measure_peak = False

    def line(s: dict) -> str:
        return (
            f"d={s['dim']}: best val ppl {s['best_val_ppl']:.2f} ({s['best_val_bpb']:.4f} bits/byte) at epoch "
            f"{s['peak_epoch']:g}; test ppl {s['test_ppl']:.2f} ({s['test_bpb']:.4f} bits/byte, whole split); "
            f"{s['flops_to_best']:.3g} FLOPs to the best; {s['epoch_s']:.0f} s/epoch; "
            f"peak mem {s['peak_mem_bytes'] / 2**20:.0f} MiB; params {s['embedding_params']:,} embedding + "
            f"{s['rest_params']:,} rest"
        )

    with training_bars(not as_json) as progress:
        summary = run_convergence(
            cfg,
            dim_list,
            out,
            settings,
            progress=progress,
            on_result=None if as_json else lambda s: console.print(line(s)),
        )
    if as_json:
        return print_json(summary)
    console.print(f"summaries: {out}/d<D>/summary.json")


@app.command("converge-report")
@handle_errors
def converge_report_cmd(
    results: str = typer.Option("docs/lm/converge", help="Folder of per-width summary files (d<D>.json)."),
    kn: str = typer.Option("docs/lm/kn_full_split.json", help="Whole-split Kneser-Ney figures (same targets, bytes)."),
    out: str = typer.Option(None, help="Where to write crossings.json and the plot (default: --results)."),
    unfinished: bool = typer.Option(
        False, "--unfinished", help="Also widths still training in --results (from their curves, marked so)."
    ),
    as_json: bool = typer.Option(False, "--json"),
):
    """Where each width first beats the Kneser-Ney 3- and 4-gram on the whole test split, and the FLOPs plot."""
    from rag.lm.converge_report import write_converge_report

    report = write_converge_report(results, kn, out or results, unfinished)
    if as_json:
        return print_json(report)
    for line in report["lines"]:
        console.print(line)
    console.print(f"written: {report['json']}, {report['plot']}")


@app.command("report")
@handle_errors
def report_cmd(
    out: str = typer.Option("results/lm", help="A sweep directory."),
    lr_scan: str = typer.Option(None, help="lr-scan directories to include (comma-separated)."),
    init_runs: str = typer.Option(
        None, help="Run directories of one d and budget with each --init (comma-separated), tabulated side by side."
    ),
):
    """Redraw report.md, the tables and the plots of a (finished or partial) sweep."""
    from pathlib import Path

    from rag.lm.report import write_report
    from rag.lm.sweep import load_sweep, write_tables

    rows, plan = load_sweep(out)
    write_tables(rows, Path(out), plan)
    console.print(f"report: {write_report(rows, Path(out), plan, lr_scan=lr_scan, init_run=init_runs)}")


@app.command("lr-scan")
@handle_errors
def lr_scan_cmd(
    corpus: str = typer.Option("wiki-lm", help=CORPUS_HELP),
    dims: str = typer.Option("128,1024", help="Comma-separated d (smallest and largest of the sweep)."),
    factors: str = typer.Option("0.5,1,2", help="Multiples of the default LR rule 2e-3·sqrt(128/d)."),
    flops: float = typer.Option(None, min=1, help="Training FLOPs per run (compute-matched across d)."),
    tokens: int = typer.Option(None, min=1, help="Training tokens per run (instead of --flops)."),
    layers: int = typer.Option(6, min=1),
    heads: int = typer.Option(8, min=1),
    vocab: int = typer.Option(10000, min=257, max=65535),
    context: int = typer.Option(128, min=2),
    batch: int = typer.Option(16, min=1),
    threads: int = typer.Option(None, min=1),
    init: str = typer.Option("gpt2", help=INIT_HELP),
    eval_tokens: int = typer.Option(16384, min=0),
    seed: int = typer.Option(1337),
    out: str = typer.Option("results/lm_lr", help="Scan directory (resumable: finished runs are kept)."),
    as_json: bool = typer.Option(False, "--json"),
):
    """Short runs at a few learning rates per d: is the default rule within 10% of the best loss found?"""
    from rag.config import RagError
    from rag.lm.lrscan import run_scan
    from rag.lm.sweep import parse_dims

    if (flops is None) == (tokens is None):
        raise RagError("give exactly one of --flops or --tokens for each scan run")
    try:
        mults = [float(x) for x in factors.split(",") if x.strip()]
    except ValueError as exc:
        raise RagError(f"--factors must be comma-separated numbers like 0.5,1,2, got {factors!r}") from exc
    if not mults or min(mults) <= 0:
        raise RagError(f"--factors must be positive, got {factors!r}")
    cfg = _base(
        corpus,
        128,
        layers,
        heads,
        vocab,
        context,
        True,
        "learned",
        None,
        None,
        None,
        batch,
        None,
        seed,
        threads,
        "auto",
        "auto",
        eval_tokens,
        False,
        _positive_out(out),
        4,
        init,
    )
    with training_bars(not as_json) as progress:
        scan = run_scan(cfg, parse_dims(dims), mults, out, flops=flops, tokens=tokens, progress=progress)
    if as_json:
        return print_json(scan)
    for line in scan["verdicts"]:
        console.print(line)
    console.print(f"scan: {scan['report']}")


GRID_HELP = "Grid folder (resumable: finished runs are reused, killed ones resume; later calls add runs)."


def _grid_run(settings, budgets, dims, seeds, factors, out, parallel, threads, as_json, kn_orders="3,4"):
    from pathlib import Path

    from rag.lm.isoflop import parse_list, run_grid, specs_for, summarize
    from rag.lm.isoflop_fit import fit_lines
    from rag.lm.kn import grid_baselines
    from rag.lm.sweep import check_out

    specs = specs_for(
        budgets,
        parse_list(dims, "--dims"),
        parse_list(seeds, "--seeds", positive=False),
        parse_list(factors, "--lr-factors", float),
    )
    check_out(Path(_positive_out(out)))
    say = (
        (lambda r: None)
        if as_json
        else (lambda r: console.print(f"{'reused' if r['reused'] else 'done'}: {r['name']}"))
    )
    run_grid(settings, specs, out, parallel=parallel, threads=threads, on_done=say)
    base = grid_baselines(settings, Path(out), parse_list(kn_orders, "--kn-orders")) if kn_orders else None
    data = summarize(out, base)
    if as_json:
        return print_json({k: data[k] for k in ("settings", "fits", "lr_check", "baselines", "wall_s_total")})
    for line in fit_lines(data):
        console.print(line, markup=False)
    console.print(f"summary: {Path(out) / 'summary.md'}")


Opt = typer.Option  # the grid commands' options, one line each where they fit


@app.command("isoflop")
@handle_errors
def isoflop_cmd(
    budgets: str = Opt("1e12,3e12,1e13", help="Training FLOPs per run, comma-separated."),
    dims: str = Opt("32,48,64,96,128,192,256", help="Comma-separated d."),
    seeds: str = Opt("1337", help="Comma-separated seeds (each (budget, d) once per seed)."),
    lr_factors: str = Opt("1", help="Multiples of the LR rule 2e-3·sqrt(128/d) (an LR check: 0.5,1,2)."),
    corpus: str = Opt("wiki-lm", help=CORPUS_HELP),
    layers: int = Opt(6, min=1),
    heads: int = Opt(8, min=1, help="Heads (fewer where d/heads < 8)."),
    vocab: int = Opt(10000, min=257, max=65535),
    context: int = Opt(128, min=2),
    batch: int = Opt(16, min=1),
    precision: str = Opt("fp32", help="fp32, bf16 or bf16-head: one for every d."),
    eval_tokens: int = Opt(32768, min=256, help="Valid/test targets scored per run."),
    slices: int = Opt(8, min=1, help="Validation checkpoints per run (the best is scored)."),
    parallel: int = Opt(1, min=1, help="Runs at a time (worker processes)."),
    threads: int = Opt(1, min=1, help="torch threads per run."),
    kn_orders: str = Opt("3,4", help="Modified Kneser-Ney orders scored on the same targets ('' for none)."),
    out: str = Opt("docs/lm/isoflop", help=GRID_HELP),
    as_json: bool = Opt(False, "--json"),
):
    """Iso-FLOP curves: train every d at every FLOP budget, fit a parabola in ln d per budget, then d_opt(C), loss(C)."""
    from rag.lm.isoflop import grid_settings, parse_budgets

    settings = grid_settings(corpus, vocab, layers, heads, context, batch, precision, eval_tokens, slices, "flops")
    _grid_run(settings, parse_budgets(budgets), dims, seeds, lr_factors, out, parallel, threads, as_json, kn_orders)


@app.command("token-curve")
@handle_errors
def token_curve_cmd(
    tokens: int = Opt(..., min=1, help="Training tokens for every d."),
    dims: str = Opt("32,64,128,256", help="Comma-separated d."),
    patience: int = Opt(3, min=1, help="Early stopping: validation checks without improvement."),
    seeds: str = Opt("1337"),
    corpus: str = Opt("wiki-lm", help=CORPUS_HELP),
    layers: int = Opt(6, min=1),
    heads: int = Opt(8, min=1),
    vocab: int = Opt(10000, min=257, max=65535),
    context: int = Opt(128, min=2),
    batch: int = Opt(16, min=1),
    precision: str = Opt("fp32"),
    eval_tokens: int = Opt(32768, min=256),
    slices: int = Opt(12, min=1),
    parallel: int = Opt(1, min=1),
    threads: int = Opt(1, min=1),
    kn_orders: str = Opt("3,4"),
    out: str = Opt("docs/lm/token_curve", help=GRID_HELP),
    as_json: bool = Opt(False, "--json"),
):
    """Token-matched curve: every d sees the same training tokens; best validation bpb (early stopping) against d."""
    from rag.lm.isoflop import grid_settings

    settings = grid_settings(
        corpus, vocab, layers, heads, context, batch, precision, eval_tokens, slices, "tokens", patience
    )
    _grid_run(settings, [float(tokens)], dims, seeds, "1", out, parallel, threads, as_json, kn_orders)


@app.command("precision-probe")
@handle_errors
def precision_probe_cmd(
    dims: str = Opt("16,32,64,128,256"),
    threads: int = Opt(1, min=1),
    steps: int = Opt(5, min=3),
    out: str = Opt(None, help="Also write JSON here."),
    as_json: bool = Opt(False, "--json"),
):
    """fp32 against bf16 autocast training throughput at each d (how the grid's one precision was chosen)."""
    from rag.lm.isoflop import parse_list, precision_probe, probe_line

    rows = precision_probe(parse_list(dims, "--dims"), threads=threads, steps=steps, out=out)
    if as_json:
        return print_json(rows)
    console.print("\n".join(probe_line(r) for r in rows))


@app.command("kn")
@handle_errors
def kn_cmd(
    corpus: str = Opt("wiki-lm", help=CORPUS_HELP),
    orders: str = Opt("3,4"),
    vocab: int = Opt(10000, min=257, max=65535),
    context: int = Opt(128, min=2),
    eval_tokens: int = Opt(0, min=0, help="Valid/test targets (the LMs' first N; 0: all)."),
    as_json: bool = Opt(False, "--json"),
):
    """Interpolated modified Kneser-Ney n-gram baselines (Chen & Goodman) in bits per byte on the LMs' targets."""
    from rag.lm.data import prepare
    from rag.lm.isoflop import parse_list
    from rag.lm.kn import kn_baselines, kn_lines

    res = kn_baselines(prepare(corpus, vocab), context, eval_tokens or None, parse_list(orders, "--orders"))
    print_json(res) if as_json else console.print("\n".join(kn_lines(res)), markup=False)


@app.command("info")
@handle_errors
def info_cmd(
    dim: int = typer.Option(256),
    vocab: int = typer.Option(10000),
    layers: int = typer.Option(6),
    heads: int = typer.Option(8),
    context: int = typer.Option(128),
    tie: bool = typer.Option(True, "--tie/--no-tie"),
    pos: str = typer.Option("learned"),
    as_json: bool = typer.Option(False, "--json"),
):
    """Parameter, memory and FLOP accounting for one shape, without training."""
    from rag.lm.model import GPTConfig, accounting

    acc = accounting(
        GPTConfig(vocab=vocab, dim=dim, layers=layers, heads=heads, context=context, tie=tie, pos=pos).check()
    )
    if as_json:
        return print_json(acc)
    from rich.table import Table

    t = Table(title=f"GPT d={dim}, V={vocab}, {layers} layers, {heads} heads, T={context}, tied={tie}, pos={pos}")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    f = acc["flops"]
    for k, v in [
        ("parameters", f"{acc['params']:,}"),
        ("embedding V·d", f"{acc['embedding_params']:,} ({100 * acc['embedding_share']:.1f}%)"),
        ("positions", f"{acc['position_params']:,}"),
        ("separate head", f"{acc['head_params']:,}"),
        ("weights fp32", f"{acc['bytes_fp32'] / 2**20:.1f} MiB"),
        ("weights fp16", f"{acc['bytes_fp16'] / 2**20:.1f} MiB"),
        ("train memory (weights+grads+Adam)", f"{acc['train_mem_est_bytes'] / 2**20:.1f} MiB"),
        ("1.5·√V heuristic d", f"{acc['heuristic_dim_1_5_sqrt_v']:.0f}"),
        ("attention FLOPs/token (fwd)", f"{f['attention_fwd']:,}"),
        ("  of which T·d scores", f"{f['attention_scores_fwd']:,}"),
        ("MLP FLOPs/token (fwd)", f"{f['mlp_fwd']:,}"),
        ("head FLOPs/token (fwd)", f"{f['head_fwd']:,}"),
        ("training FLOPs/token (3× fwd)", f"{f['train']:,}"),
    ]:
        t.add_row(k, v)
    console.print(t)


@app.command("bench")
@handle_errors
def bench_cmd(
    dims: str = typer.Option("128,256,512,1024"),
    threads: int = typer.Option(2),
    batch: int = typer.Option(16),
    steps: int = typer.Option(5, help="Timed steps per model (median)."),
    compile: bool = typer.Option(False, "--compile/--no-compile", help="Also torch.compile our model."),
    as_json: bool = typer.Option(False, "--json"),
):
    """Time our training step against a plain nanoGPT-style fp32 reference, same shapes, same run."""
    from dataclasses import asdict

    from rag.lm.bench import run_bench
    from rag.lm.sweep import parse_dims

    def report(r) -> None:
        if not as_json:
            console.print(
                f"d={r.dim}: ref {r.ref_tokens_per_s:.0f} tok/s ({r.ref_gflops:.0f} GFLOP/s) · ours "
                f"{r.ours_tokens_per_s:.0f} tok/s ({r.ours_gflops:.0f} GFLOP/s, {r.ours_mode}) · ratio {r.ratio:.2f}× · "
                f"{r.ours_pct_fp32_peak:.0f}% of fp32 peak, {r.ours_pct_bf16_peak:.0f}% of bf16 peak"
            )

    result = run_bench(parse_dims(dims), threads=threads, batch=batch, steps=steps, compile=compile, progress=report)
    result["rows"] = [asdict(r) for r in result["rows"]]
    if as_json:
        return print_json(result)
    console.print(
        f"matmul peak (2048³, {threads} threads, same run): fp32 {result['peak_fp32_gflops']:.0f} GFLOP/s, "
        f"bf16 {result['peak_bf16_gflops']:.0f} GFLOP/s"
    )


if __name__ == "__main__":
    app()
