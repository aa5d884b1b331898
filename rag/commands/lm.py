"""`rag lm train|sweep|info|bench`: train small GPTs at several embedding dimensions d and compare.

Also runnable as `torchrun --nproc_per_node=2 -m rag.commands.lm train ...` for DDP.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Annotated, Optional

import typer

from rag.commands.common import console, err_console, handle_errors, print_json
from rag.commands.lm_options import (
    CONVERGE,
    GRID,
    MODEL,
    TRAIN,
    BatchOpt,
    CompileOpt,
    ContextOpt,
    CorpusOpt,
    DimOpt,
    DimsOpt,
    EvalTokensOpt,
    GridEvalTokensOpt,
    GridHeadsOpt,
    GridPrecisionOpt,
    GridSlicesOpt,
    HeadsOpt,
    InitOpt,
    JsonOpt,
    KnOrdersOpt,
    LayersOpt,
    LrOpt,
    ParallelOpt,
    PosOpt,
    PrecisionOpt,
    RunThreadsOpt,
    SeedOpt,
    SeedsOpt,
    SlicesOpt,
    ThreadsOpt,
    TieOpt,
    VocabOpt,
    with_config,
)

app = typer.Typer(
    help="Train GPT language models at several embedding dimensions d (the d-sweep).", no_args_is_help=True
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


@app.command("train")
@handle_errors
@with_config
def train_cmd(
    config,
    corpus: CorpusOpt = TRAIN.corpus,
    dim: DimOpt = MODEL.dim,
    layers: LayersOpt = MODEL.layers,
    heads: HeadsOpt = MODEL.heads,
    vocab: VocabOpt = MODEL.vocab,
    context: ContextOpt = MODEL.context,
    tie: TieOpt = MODEL.tie,
    pos: PosOpt = MODEL.pos,
    init: InitOpt = MODEL.init,
    epochs: Annotated[
        Optional[float], typer.Option(help="Passes over the train split (default 1 if no budget is given).")
    ] = None,
    tokens: Annotated[Optional[int], typer.Option(min=1, help="Training token budget (token-matched).")] = None,
    minutes: Annotated[
        Optional[float], typer.Option(help="Time budget (converted to steps from a measured rate).")
    ] = None,
    batch: BatchOpt = TRAIN.batch,
    lr: LrOpt = None,
    seed: SeedOpt = TRAIN.seed,
    threads: ThreadsOpt = None,
    precision: PrecisionOpt = TRAIN.precision,
    compile: CompileOpt = TRAIN.compile,
    eval_tokens: EvalTokensOpt = TRAIN.eval_tokens,
    slices: SlicesOpt = TRAIN.slices,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out after a kill.")] = False,
    *,
    out: Annotated[str, typer.Option(help="Run directory (checkpoints, curve, result.json).")],
    as_json: JsonOpt = False,
):
    """Train one model and print its figures next to the unigram/bigram/trigram baselines."""
    import os
    from pathlib import Path

    from rag.lm.sweep import check_out
    from rag.lm.train import train

    cfg = config()
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


TO_CONVERGENCE_HELP = (
    "Train each d until validation stops improving: cosine over --max-epochs, whole-split validation every "
    "--eval-every epoch, early stopping after --patience, the best checkpoint scored on the whole test split."
)


@app.command("sweep")
@handle_errors
@with_config
def sweep_cmd(
    config,
    corpus: CorpusOpt = TRAIN.corpus,
    dims: DimsOpt = "128,256,512,1024",
    layers: LayersOpt = MODEL.layers,
    heads: HeadsOpt = MODEL.heads,
    vocab: VocabOpt = MODEL.vocab,
    context: ContextOpt = MODEL.context,
    tie: TieOpt = MODEL.tie,
    pos: PosOpt = MODEL.pos,
    init: InitOpt = MODEL.init,
    budget: Annotated[
        str,
        typer.Option(
            help="compute (same training FLOPs per d; default on CPU) or "
            "tokens (same tokens/epochs per d; default on GPU)."
        ),
    ] = "auto",
    minutes: Annotated[
        Optional[float],
        typer.Option(help="compute budget: size the FLOPs per d so the sweep fits this (default 25)."),
    ] = None,
    flops: Annotated[
        Optional[float], typer.Option(min=1, help="compute budget: training FLOPs per d, given directly.")
    ] = None,
    epochs: Annotated[
        Optional[float], typer.Option(help="tokens budget: passes over the train split for every d (default 1).")
    ] = None,
    tokens: Annotated[Optional[int], typer.Option(min=1, help="tokens budget: training tokens for every d.")] = None,
    batch: BatchOpt = TRAIN.batch,
    lr: LrOpt = None,
    seed: SeedOpt = TRAIN.seed,
    threads: ThreadsOpt = None,
    precision: PrecisionOpt = TRAIN.precision,
    compile: CompileOpt = TRAIN.compile,
    eval_tokens: EvalTokensOpt = 16384,
    slices: SlicesOpt = 8,
    resume: Annotated[bool, typer.Option("--resume", help="Skip finished d, resume the interrupted one.")] = False,
    yes: Annotated[bool, typer.Option("--yes", help="Run even if the estimate exceeds two hours.")] = False,
    out: Annotated[str, typer.Option(help="Sweep directory (one run folder per d).")] = "results/lm",
    as_json: JsonOpt = False,
    to_convergence: Annotated[bool, typer.Option("--to-convergence", help=TO_CONVERGENCE_HELP)] = False,
    max_epochs: Annotated[
        float, typer.Option(help="--to-convergence: the epoch cap (the cosine schedule's length).")
    ] = CONVERGE.max_epochs,
    eval_every: Annotated[
        float, typer.Option(help="--to-convergence: validate every this fraction of an epoch.")
    ] = CONVERGE.eval_every,
    patience: Annotated[
        int, typer.Option(help="--to-convergence: validations without improvement before stopping.")
    ] = CONVERGE.patience,
    dropout: Annotated[
        Optional[float], typer.Option(help="--to-convergence: dropout (default: the preset of each width).")
    ] = CONVERGE.dropout,
    weight_decay: Annotated[
        Optional[float], typer.Option(help="--to-convergence: AdamW weight decay (default: the preset).")
    ] = CONVERGE.weight_decay,
):
    """Train every d under one budget; write results.csv/json, report.md and PNGs, baselines included."""
    from rag.lm.settings import ConvergeSettings, check_positive
    from rag.lm.stats import budget_title
    from rag.lm.sweep import parse_dims, run_sweep, sweep_budget

    if to_convergence:
        check_positive("--lr", lr)
        settings = ConvergeSettings(max_epochs, eval_every, patience, dropout, weight_decay).check()
        return _converge(config, parse_dims(dims), settings, out, as_json)
    mode, minutes = sweep_budget(budget, minutes, flops, tokens, epochs)
    dim_list = parse_dims(dims)
    cfg = config(dim=dim_list[0], minutes=minutes)

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


def _converge(config, dims: list[int], settings, out: str, as_json: bool):
    from rag.lm.converge import base_fields, run_convergence

    cfg = config(dim=dims[0], **base_fields(settings))

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
            dims,
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
    results: Annotated[str, typer.Option(help="Folder of per-width summary files (d<D>.json).")] = "docs/lm/converge",
    kn: Annotated[
        str, typer.Option(help="Whole-split Kneser-Ney figures (same targets, bytes).")
    ] = "docs/lm/kn_full_split.json",
    out: Annotated[
        Optional[str], typer.Option(help="Where to write crossings.json and the plot (default: --results).")
    ] = None,
    unfinished: Annotated[
        bool,
        typer.Option("--unfinished", help="Also widths still training in --results (from their curves, marked so)."),
    ] = False,
    as_json: JsonOpt = False,
):
    """Where each width first beats the Kneser-Ney 3- and 4-gram on the whole test split, and the FLOPs plot."""
    from rag.lm.converge_report import write_converge_report

    report = write_converge_report(results, kn, out or results, unfinished)
    if as_json:
        return print_json(report)
    for line in report["lines"]:
        console.print(line)
    if report["scan_table"]:
        console.print("dropout and weight decay scanned (the lowest best validation bits per byte is chosen):")
        console.print(report["scan_table"], markup=False, highlight=False, soft_wrap=True)
    console.print(f"written: {report['json']}, {report['plot']}")


@app.command("report")
@handle_errors
def report_cmd(
    out: Annotated[str, typer.Option(help="A sweep directory.")] = "results/lm",
    lr_scan: Annotated[Optional[str], typer.Option(help="lr-scan directories to include (comma-separated).")] = None,
    init_runs: Annotated[
        Optional[str],
        typer.Option(
            help="Run directories of one d and budget with each --init (comma-separated), tabulated side by side."
        ),
    ] = None,
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
@with_config
def lr_scan_cmd(
    config,
    corpus: CorpusOpt = TRAIN.corpus,
    dims: Annotated[str, typer.Option(help="Comma-separated d (smallest and largest of the sweep).")] = "128,1024",
    factors: Annotated[str, typer.Option(help="Multiples of the default LR rule 2e-3·sqrt(128/d).")] = "0.5,1,2",
    flops: Annotated[
        Optional[float], typer.Option(min=1, help="Training FLOPs per run (compute-matched across d).")
    ] = None,
    tokens: Annotated[Optional[int], typer.Option(min=1, help="Training tokens per run (instead of --flops).")] = None,
    layers: LayersOpt = MODEL.layers,
    heads: HeadsOpt = MODEL.heads,
    vocab: VocabOpt = MODEL.vocab,
    context: ContextOpt = MODEL.context,
    batch: BatchOpt = TRAIN.batch,
    threads: ThreadsOpt = None,
    init: InitOpt = MODEL.init,
    eval_tokens: EvalTokensOpt = 16384,
    seed: SeedOpt = TRAIN.seed,
    out: Annotated[str, typer.Option(help="Scan directory (resumable: finished runs are kept).")] = "results/lm_lr",
    as_json: JsonOpt = False,
):
    """Short runs at a few learning rates per d: is the default rule within 10% of the best loss found?"""
    from rag.lm.lrscan import run_scan, scan_factors
    from rag.lm.sweep import parse_dims

    mults = scan_factors(factors, flops, tokens)
    cfg = config(dim=128, tokens=None)  # each run's d and tokens are set by the scan
    with training_bars(not as_json) as progress:
        scan = run_scan(cfg, parse_dims(dims), mults, out, flops=flops, tokens=tokens, progress=progress)
    if as_json:
        return print_json(scan)
    for line in scan["verdicts"]:
        console.print(line)
    console.print(f"scan: {scan['report']}")


GridOutOpt = Annotated[
    str,
    typer.Option(help="Grid folder (resumable: finished runs are reused, killed ones resume; later calls add runs)."),
]


def _grid_run(settings, budgets, dims, seeds, factors, out, parallel, threads, as_json, kn_orders):
    from pathlib import Path

    from rag.lm.isoflop import run_study
    from rag.lm.isoflop_summary import fit_lines

    def done(r: dict) -> None:
        if not as_json:
            console.print(f"{'reused' if r['reused'] else 'done'}: {r['name']}")

    data = run_study(settings, budgets, dims, seeds, factors, out, parallel, threads, kn_orders, on_done=done)
    if as_json:
        return print_json({k: data[k] for k in ("settings", "fits", "lr_check", "baselines", "wall_s_total")})
    for line in fit_lines(data):
        console.print(line, markup=False)
    console.print(f"summary: {Path(out) / 'summary.md'}")


@app.command("isoflop")
@handle_errors
def isoflop_cmd(
    budgets: Annotated[str, typer.Option(help="Training FLOPs per run, comma-separated.")] = "1e12,3e12,1e13",
    dims: DimsOpt = "32,48,64,96,128,192,256",
    seeds: SeedsOpt = "1337",
    lr_factors: Annotated[
        str, typer.Option(help="Multiples of the LR rule 2e-3·sqrt(128/d) (an LR check: 0.5,1,2).")
    ] = "1",
    corpus: CorpusOpt = GRID.corpus,
    layers: LayersOpt = GRID.layers,
    heads: GridHeadsOpt = GRID.heads,
    vocab: VocabOpt = GRID.vocab,
    context: ContextOpt = GRID.context,
    batch: BatchOpt = GRID.batch,
    precision: GridPrecisionOpt = GRID.precision,
    eval_tokens: GridEvalTokensOpt = GRID.eval_tokens,
    slices: GridSlicesOpt = GRID.slices,
    parallel: ParallelOpt = 1,
    threads: RunThreadsOpt = 1,
    kn_orders: KnOrdersOpt = "3,4",
    out: GridOutOpt = "docs/lm/isoflop",
    as_json: JsonOpt = False,
):
    """Iso-FLOP curves: train every d at every FLOP budget, fit a parabola in ln d per budget, then d_opt(C), loss(C)."""
    from rag.lm.isoflop import grid_settings, parse_budgets

    settings = grid_settings(corpus, vocab, layers, heads, context, batch, precision, eval_tokens, slices, "flops")
    _grid_run(settings, parse_budgets(budgets), dims, seeds, lr_factors, out, parallel, threads, as_json, kn_orders)


@app.command("token-curve")
@handle_errors
def token_curve_cmd(
    *,
    tokens: Annotated[int, typer.Option(min=1, help="Training tokens for every d.")],
    dims: DimsOpt = "32,64,128,256",
    patience: Annotated[int, typer.Option(min=1, help="Early stopping: validation checks without improvement.")] = 3,
    seeds: SeedsOpt = "1337",
    corpus: CorpusOpt = GRID.corpus,
    layers: LayersOpt = GRID.layers,
    heads: GridHeadsOpt = GRID.heads,
    vocab: VocabOpt = GRID.vocab,
    context: ContextOpt = GRID.context,
    batch: BatchOpt = GRID.batch,
    precision: GridPrecisionOpt = GRID.precision,
    eval_tokens: GridEvalTokensOpt = GRID.eval_tokens,
    slices: GridSlicesOpt = 12,
    parallel: ParallelOpt = 1,
    threads: RunThreadsOpt = 1,
    kn_orders: KnOrdersOpt = "3,4",
    out: GridOutOpt = "docs/lm/token_curve",
    as_json: JsonOpt = False,
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
    dims: DimsOpt = "16,32,64,128,256",
    threads: RunThreadsOpt = 1,
    steps: Annotated[int, typer.Option(min=3)] = 5,
    out: Annotated[Optional[str], typer.Option(help="Also write JSON here.")] = None,
    as_json: JsonOpt = False,
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
    corpus: CorpusOpt = TRAIN.corpus,
    orders: Annotated[str, typer.Option()] = "3,4",
    vocab: VocabOpt = MODEL.vocab,
    context: ContextOpt = MODEL.context,
    eval_tokens: Annotated[int, typer.Option(min=0, help="Valid/test targets (the LMs' first N; 0: all).")] = 0,
    as_json: JsonOpt = False,
):
    """Interpolated modified Kneser-Ney n-gram baselines (Chen & Goodman) in bits per byte on the LMs' targets."""
    from rag.lm.data import prepare
    from rag.lm.isoflop import parse_list
    from rag.lm.kn import kn_baselines, kn_lines

    res = kn_baselines(prepare(corpus, vocab), context, eval_tokens or None, parse_list(orders, "--orders"))
    print_json(res) if as_json else console.print("\n".join(kn_lines(res)), markup=False)


@app.command("info")
@handle_errors
@with_config
def info_cmd(
    config,
    dim: DimOpt = MODEL.dim,
    vocab: VocabOpt = MODEL.vocab,
    layers: LayersOpt = MODEL.layers,
    heads: HeadsOpt = MODEL.heads,
    context: ContextOpt = MODEL.context,
    tie: TieOpt = MODEL.tie,
    pos: PosOpt = MODEL.pos,
    as_json: JsonOpt = False,
):
    """Parameter, memory and FLOP accounting for one shape, without training."""
    from rag.lm.model import accounting

    acc = accounting(config().model.check())
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
    dims: DimsOpt = "128,256,512,1024",
    threads: RunThreadsOpt = 2,
    batch: BatchOpt = TRAIN.batch,
    steps: Annotated[int, typer.Option(help="Timed steps per model (median).")] = 5,
    compile: Annotated[bool, typer.Option("--compile/--no-compile", help="Also torch.compile our model.")] = False,
    as_json: JsonOpt = False,
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
