"""report.md and the five PNGs of a d-sweep, with sentences generated from the numbers."""
from __future__ import annotations

import json
from pathlib import Path

PLOTS = {"ppl": "val_ppl_vs_d.png", "time": "epoch_time_vs_d.png", "memory": "peak_mem_vs_d.png",
         "curves": "loss_curves.png", "params": "params_vs_d.png"}


def plot_all(rows: list[dict], out_dir: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = [r["dim"] for r in rows]
    paths = {}

    def save(fig, key):
        fig.tight_layout()
        fig.savefig(out_dir / PLOTS[key], dpi=110)
        plt.close(fig)
        paths[key] = out_dir / PLOTS[key]

    def line(key, ys, ylabel, title, logy=False):
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        ax.plot(dims, ys, "o-")
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xticks(dims, [str(d) for d in dims])
        ax.set(xlabel="d (embedding dimension)", ylabel=ylabel, title=title)
        ax.grid(alpha=0.3)
        save(fig, key)

    line("ppl", [r["val_ppl"] for r in rows], "validation perplexity (per token)", "Validation perplexity vs d")
    line("time", [r["epoch_s"] for r in rows], "seconds per epoch", "Epoch time vs d", logy=True)
    line("memory", [r["peak_mem_bytes"] / 2 ** 20 for r in rows], "peak memory (MiB)", "Peak memory vs d", logy=True)

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for r in rows:
        curve = read_curve(out_dir / f"d{r['dim']}")
        if curve:
            ax.plot([c["tokens"] for c in curve], smooth([c["loss"] for c in curve]), label=f"d={r['dim']}")
    ax.set(xlabel="training tokens", ylabel="training loss (nats/token)", title="Loss curves")
    ax.legend()
    ax.grid(alpha=0.3)
    save(fig, "curves")

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    emb = [r["embedding_params"] / 1e6 for r in rows]
    rest = [(r["params"] - r["embedding_params"]) / 1e6 for r in rows]
    xs = range(len(dims))
    ax.bar(xs, emb, label="embedding V·d")
    ax.bar(xs, rest, bottom=emb, label="rest (blocks, positions, head)")
    ax.set_xticks(list(xs), [str(d) for d in dims])
    ax.set(xlabel="d", ylabel="parameters (millions)", title="Parameters vs d")
    ax.legend()
    save(fig, "params")
    return paths


def read_curve(run: Path) -> list[dict]:
    from rag.lm.checkpoint import read_curve as _read

    return _read(run)


def smooth(ys: list[float], k: int = 9) -> list[float]:
    out = []
    for i in range(len(ys)):
        window = ys[max(0, i - k + 1): i + 1]
        out.append(sum(window) / len(window))
    return out


def findings(rows: list[dict]) -> list[str]:
    """Plain sentences drawn from the numbers: where perplexity stops improving, how cost grows with d."""
    from rag.lm.sweep import fit_exponent

    rows = sorted(rows, key=lambda r: r["dim"])
    dims = [r["dim"] for r in rows]
    out = []
    best = min(rows, key=lambda r: r["val_ppl"])
    gains = [(a, b, 100 * (a["val_ppl"] - b["val_ppl"]) / a["val_ppl"]) for a, b in zip(rows, rows[1:])]
    stop = next(((a, b, g) for a, b, g in gains if g < 2.0), None)
    out.append(f"The best validation perplexity is {best['val_ppl']:.1f} at d={best['dim']}.")
    for a, b, g in gains:
        verb = "improves" if g > 0 else "worsens"
        out.append(f"Going from d={a['dim']} to d={b['dim']} {verb} validation perplexity by {abs(g):.1f}% "
                   f"({a['val_ppl']:.1f} → {b['val_ppl']:.1f}) for {b['params'] / a['params']:.2f}× the parameters "
                   f"and {b['epoch_s'] / a['epoch_s']:.2f}× the time per epoch.")
    if stop:
        out.append(f"Perplexity stops improving (gain under 2%) beyond d={stop[0]['dim']}: at this token budget a "
                   f"wider model is not worth its cost.")
    else:
        out.append(f"Perplexity still improves by at least 2% at every step up to d={dims[-1]}.")
    if len(rows) >= 2:
        kt = fit_exponent(dims, [r["epoch_s"] for r in rows])
        km = fit_exponent(dims, [r["peak_mem_bytes"] for r in rows])
        kp = fit_exponent(dims, [r["params"] for r in rows])
        out.append(f"Epoch time grows as d^{kt:.2f}, peak memory as d^{km:.2f} and parameters as d^{kp:.2f} "
                   f"over d={dims[0]}..{dims[-1]} (least-squares fit of log–log).")
        if all(r.get("mem_baseline_bytes") for r in rows):
            above = [r["peak_mem_bytes"] - r["mem_baseline_bytes"] for r in rows]
            out.append(f"Peak memory above the process's baseline (what training that d added) grows as "
                       f"d^{fit_exponent(dims, above):.2f}: {fmt_bytes(above[0])} at d={dims[0]}, "
                       f"{fmt_bytes(above[-1])} at d={dims[-1]}; the estimate weights+grads+Adam is "
                       f"{fmt_bytes(rows[0]['train_mem_est_bytes'])} → {fmt_bytes(rows[-1]['train_mem_est_bytes'])}.")
    return out


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def table(rows: list[dict]) -> str:
    head = "| d | params | embedding V·d (share) | tokens seen | val ppl | test ppl | test ppl/word | epoch s | tokens/s | peak mem | MFU | device |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in sorted(rows, key=lambda r: r["dim"]):
        lines.append(f"| {r['dim']} | {r['params'] / 1e6:.2f}M | {r['embedding_params'] / 1e6:.2f}M ({100 * r['embedding_share']:.0f}%) "
                     f"| {r['tokens_seen']:,} | {r['val_ppl']:.1f} | {r['test_ppl']:.1f} | {r['test_ppl_per_word']:.1f} "
                     f"| {r['epoch_s']:.0f} | {r['tokens_per_s']:.0f} | {fmt_bytes(r['peak_mem_bytes'])} | {100 * r['mfu']:.1f}% | {r['device']} |")
    return "\n".join(lines)


def write_report(rows: list[dict], out_dir: Path, plan: dict) -> Path:
    out_dir = Path(out_dir)
    plot_all(rows, out_dir)
    r0 = rows[0]
    lines = ["# LM d-sweep", "",
             f"Corpus `{r0.get('corpus', '?')}`, V={r0['vocab']}, {r0['layers']} layers, {r0['heads']} heads, "
             f"context {r0.get('context', '?')}, batch {r0.get('batch', '?')}, tied={r0['tied']}, positions {r0['pos']}; "
             f"device and precision per row (bf16-head: blocks fp32, head and loss matmuls bf16).", "",
             f"**Budget:** {plan.get('budget_rule', '')}; every d saw {r0['tokens_seen']:,} training tokens "
             f"(one epoch of the train split is {r0.get('train_tokens_per_epoch', 0):,} tokens). "
             f"Measured probe rates (tokens/s): {json.dumps(plan.get('probe_tokens_per_s', {}))}. "
             f"The sweep took {plan.get('sweep_s', 0) / 60:.1f} min.", "",
             "`epoch_s` is the measured training time scaled to one pass over the train split; validation and test "
             f"perplexity are scored on the first {r0.get('eval_tokens', {}).get('valid', '?'):,} / "
             f"{r0.get('eval_tokens', {}).get('test', '?'):,} tokens of each split; per-word perplexity uses the test "
             f"split's tokens per whitespace word ({r0.get('tokens_per_word_test', '?')}). MFU divides achieved FLOP/s "
             f"by the peak of the row's precision: {'; '.join(sorted({r.get('peak_source', '?') for r in rows}))}. Peak memory is {'CUDA max_memory_allocated' if 'cuda' in r0['device'] else 'the peak RSS of the process while training that d (it includes the ' + fmt_bytes(r0.get('mem_baseline_bytes') or 0) + ' the process held before: Python, torch, token ids)'}.",
             "", table(rows), "", "## Findings", ""]
    lines += [f"- {s}" for s in findings(rows)]
    lines += ["", "## Plots", ""] + [f"![{k}]({v})" for k, v in PLOTS.items()]
    lines += ["", "## Generated text (top-k 40, temperature 0.8)", ""]
    for r in sorted(rows, key=lambda r: r["dim"]):
        for s in r.get("samples", [])[:3]:
            lines.append(f"- d={r['dim']}: {s}")
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path
