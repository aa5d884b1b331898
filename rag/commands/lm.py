"""`rag lm train|sweep|info|bench`: train small GPTs at several embedding dimensions d and compare.

Also runnable as `torchrun --nproc_per_node=2 -m rag.commands.lm train ...` for DDP.
"""
from __future__ import annotations

from contextlib import contextmanager

import typer

from rag.commands.common import console, err_console, handle_errors, print_json

app = typer.Typer(help="Train GPT language models at several embedding dimensions d (the d-sweep).",
                  no_args_is_help=True)

CORPUS_HELP = "wiki-lm (in RAG_DATA_DIR), wikitext-2 (downloaded if missing), or a folder with wiki.{train,valid,test}.raw"


@contextmanager
def training_bars(enabled: bool = True):
    """Yield a progress(event) callback drawing one rich bar per d with loss and tokens/s."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("loss {task.fields[loss]:.3f} · {task.fields[rate]:.0f} tok/s"),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=err_console)
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


def _base(corpus, dim, layers, heads, vocab, context, tie, pos, epochs, tokens, minutes, batch, lr, seed, threads,
          precision, compile, eval_tokens, resume, out, slices=4):
    from rag.lm.sweep import default_base

    return default_base(corpus=corpus, dim=dim, layers=layers, heads=heads, vocab=vocab, context=context, tie=tie,
                        pos=pos, epochs=epochs, tokens=tokens, minutes=minutes, batch=batch, lr=lr, seed=seed,
                        threads=threads, precision=precision, compile=compile,
                        eval_tokens=eval_tokens or None, resume=resume, out=out, slices=slices)


def _row_line(r: dict) -> str:
    return (f"d={r['dim']}: params {r['params']:,} (embedding {r['embedding_params']:,}), val ppl {r['val_ppl']:.2f}, "
            f"test ppl {r['test_ppl']:.2f} (per word {r['test_ppl_per_word']:.1f}), {r['tokens_per_s']:.0f} tok/s, "
            f"peak mem {r['peak_mem_bytes'] / 2**20:.0f} MiB, MFU {100 * r['mfu']:.1f}%")


@app.command("train")
@handle_errors
def train_cmd(corpus: str = typer.Option("wiki-lm", help=CORPUS_HELP),
              dim: int = typer.Option(256, help="Embedding dimension d."),
              layers: int = typer.Option(6), heads: int = typer.Option(8),
              vocab: int = typer.Option(10000, help="BPE vocabulary size V."),
              context: int = typer.Option(128, help="Context length T."),
              tie: bool = typer.Option(True, "--tie/--no-tie", help="Tie the output head to the input embedding."),
              pos: str = typer.Option("learned", help="learned, sinusoidal or rope."),
              epochs: float = typer.Option(None, help="Passes over the train split (default 1 if no budget is given)."),
              tokens: int = typer.Option(None, help="Training token budget."),
              minutes: float = typer.Option(None, help="Time budget (converted to steps from a measured rate)."),
              batch: int = typer.Option(16), lr: float = typer.Option(None, help="Peak LR (default 2e-3·sqrt(128/d))."),
              seed: int = typer.Option(1337), threads: int = typer.Option(None, help="torch threads (default: all)."),
              precision: str = typer.Option("auto", help="auto (GPU: bf16; AMX CPU: bf16 from d=256, bf16 head below), fp32, bf16, bf16-head."),
              compile: str = typer.Option("auto", help="torch.compile: auto (GPU only), on, off."),
              eval_tokens: int = typer.Option(32768, help="Valid/test tokens scored at the end (0: whole split)."),
              slices: int = typer.Option(4, help="Checkpoints per run (at least one per epoch)."),
              resume: bool = typer.Option(False, "--resume", help="Continue the run in --out after a kill."),
              out: str = typer.Option(..., help="Run directory (checkpoints, curve, result.json)."),
              as_json: bool = typer.Option(False, "--json", help="Print the result row as JSON.")):
    """Train one model and print its figures."""
    from rag.lm.train import train

    cfg = _base(corpus, dim, layers, heads, vocab, context, tie, pos, epochs, tokens, minutes, batch, lr, seed,
                threads, precision, compile, eval_tokens, resume, out, slices)
    import os

    main_rank = int(os.environ.get("RANK", 0)) == 0  # under torchrun only rank 0 talks
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
def sweep_cmd(corpus: str = typer.Option("wiki-lm", help=CORPUS_HELP),
              dims: str = typer.Option("128,256,512,1024", help="Comma-separated list of d."),
              layers: int = typer.Option(6), heads: int = typer.Option(8), vocab: int = typer.Option(10000),
              context: int = typer.Option(128), tie: bool = typer.Option(True, "--tie/--no-tie"),
              pos: str = typer.Option("learned"),
              epochs: float = typer.Option(None, help="Passes over the train split for every d."),
              tokens: int = typer.Option(None, help="Training tokens for every d (default: sized to --minutes)."),
              minutes: float = typer.Option(25.0, help="Whole-sweep time budget used to size the equal token budget."),
              batch: int = typer.Option(16), lr: float = typer.Option(None), seed: int = typer.Option(1337),
              threads: int = typer.Option(None), precision: str = typer.Option("auto"),
              compile: str = typer.Option("auto"),
              eval_tokens: int = typer.Option(16384, help="Valid/test tokens scored per d (0: whole split)."),
              resume: bool = typer.Option(False, "--resume", help="Skip finished d, resume the interrupted one."),
              out: str = typer.Option("results/lm", help="Sweep directory (one run folder per d)."),
              as_json: bool = typer.Option(False, "--json")):
    """Train every d with the same token budget; write results.csv, results.json, report.md and PNGs."""
    from rag.lm.sweep import parse_dims, run_sweep

    dim_list = parse_dims(dims)
    cfg = _base(corpus, dim_list[0], layers, heads, vocab, context, tie, pos, epochs, tokens, None, batch, lr, seed,
                threads, precision, compile, eval_tokens, resume, out)
    if not as_json:
        console.print(f"sweep d={dim_list} on {corpus}; budget: "
                      f"{tokens or ('%s epochs' % epochs if epochs else f'sized to fit {minutes} min')}")
    with training_bars(not as_json) as progress:
        summary = run_sweep(cfg, dim_list, out, minutes=minutes, progress=progress,
                            on_result=None if as_json else lambda r: console.print(_row_line(r)))
    if as_json:
        return print_json(summary)
    console.print(f"{summary['plan']['tokens_per_d'] or 'epoch budget'} tokens per d; sweep took "
                  f"{summary['plan']['sweep_s'] / 60:.1f} min; report: {summary['report']}")


@app.command("info")
@handle_errors
def info_cmd(dim: int = typer.Option(256), vocab: int = typer.Option(10000), layers: int = typer.Option(6),
             heads: int = typer.Option(8), context: int = typer.Option(128),
             tie: bool = typer.Option(True, "--tie/--no-tie"), pos: str = typer.Option("learned"),
             as_json: bool = typer.Option(False, "--json")):
    """Parameter, memory and FLOP accounting for one shape, without training."""
    from rag.lm.model import GPTConfig, accounting

    acc = accounting(GPTConfig(vocab=vocab, dim=dim, layers=layers, heads=heads, context=context, tie=tie,
                               pos=pos).check())
    if as_json:
        return print_json(acc)
    from rich.table import Table

    t = Table(title=f"GPT d={dim}, V={vocab}, {layers} layers, {heads} heads, T={context}, tied={tie}, pos={pos}")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    f = acc["flops"]
    for k, v in [("parameters", f"{acc['params']:,}"),
                 ("embedding V·d", f"{acc['embedding_params']:,} ({100 * acc['embedding_share']:.1f}%)"),
                 ("positions", f"{acc['position_params']:,}"), ("separate head", f"{acc['head_params']:,}"),
                 ("weights fp32", f"{acc['bytes_fp32'] / 2**20:.1f} MiB"), ("weights fp16", f"{acc['bytes_fp16'] / 2**20:.1f} MiB"),
                 ("train memory (weights+grads+Adam)", f"{acc['train_mem_est_bytes'] / 2**20:.1f} MiB"),
                 ("1.5·√V heuristic d", f"{acc['heuristic_dim_1_5_sqrt_v']:.0f}"),
                 ("attention FLOPs/token (fwd)", f"{f['attention_fwd']:,}"), ("  of which T·d scores", f"{f['attention_scores_fwd']:,}"),
                 ("MLP FLOPs/token (fwd)", f"{f['mlp_fwd']:,}"), ("head FLOPs/token (fwd)", f"{f['head_fwd']:,}"),
                 ("training FLOPs/token (3× fwd)", f"{f['train']:,}")]:
        t.add_row(k, v)
    console.print(t)


@app.command("bench")
@handle_errors
def bench_cmd(dims: str = typer.Option("128,256,512,1024"), threads: int = typer.Option(2),
              batch: int = typer.Option(16), steps: int = typer.Option(5, help="Timed steps per model (median)."),
              compile: bool = typer.Option(False, "--compile/--no-compile", help="Also torch.compile our model."),
              as_json: bool = typer.Option(False, "--json")):
    """Time our training step against a plain nanoGPT-style fp32 reference, same shapes, same run."""
    from dataclasses import asdict

    from rag.lm.bench import run_bench
    from rag.lm.sweep import parse_dims

    report = lambda r: None if as_json else console.print(  # noqa: E731
        f"d={r.dim}: ref {r.ref_tokens_per_s:.0f} tok/s ({r.ref_gflops:.0f} GFLOP/s) · ours {r.ours_tokens_per_s:.0f} tok/s "
        f"({r.ours_gflops:.0f} GFLOP/s, {r.ours_mode}) · ratio {r.ratio:.2f}× · {r.ours_pct_fp32_peak:.0f}% of fp32 peak, "
        f"{r.ours_pct_bf16_peak:.0f}% of bf16 peak")
    result = run_bench(parse_dims(dims), threads=threads, batch=batch, steps=steps, compile=compile, progress=report)
    result["rows"] = [asdict(r) for r in result["rows"]]
    if as_json:
        return print_json(result)
    console.print(f"matmul peak (2048³, {threads} threads, same run): fp32 {result['peak_fp32_gflops']:.0f} GFLOP/s, "
                  f"bf16 {result['peak_bf16_gflops']:.0f} GFLOP/s")


if __name__ == "__main__":
    app()
