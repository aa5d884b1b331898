"""report.md and the PNGs of a d-sweep, with sentences generated from the numbers.

Every plot title names the budget mode and size; the baselines (unigram, bigram, trigram, fitted on
the train split, scored on the same targets) appear in the perplexity and bits-per-byte plots, in the
compute frontier and in a table of their own.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from rag.lm.checkpoint import read_curve
from rag.lm.stats import budget_title, fit_exponent, fmt_bytes, fmt_count

PLOTS = {
    "ppl": "val_ppl_vs_d.png",
    "bpb": "bpb_vs_d.png",
    "frontier": "compute_frontier.png",
    "curves": "loss_curves.png",
    "time": "epoch_time_vs_d.png",
    "memory": "peak_mem_vs_d.png",
    "params": "params_vs_d.png",
}
BASELINE_STYLE = {"unigram": ":", "bigram": "--", "trigram": "-."}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt, fig, out_dir: Path, key: str, paths: dict) -> None:
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS[key], dpi=110)
    plt.close(fig)
    paths[key] = out_dir / PLOTS[key]


def _baseline_lines(ax, rows: list[dict], field: str) -> None:
    for name, style in BASELINE_STYLE.items():
        b = rows[0].get("baselines", {}).get(name)
        if b and field in b and not (field.endswith("ppl") and name == "unigram"):
            ax.axhline(b[field], color="grey", linestyle=style, linewidth=1, label=f"{name} ({b[field]:.3g})")


def plot_all(rows: list[dict], out_dir: Path, plan: dict) -> dict[str, Path]:
    plt = _plt()
    dims = [r["dim"] for r in rows]
    sub = budget_title(plan)
    paths: dict[str, Path] = {}

    def per_d(key, series, ylabel, title, logy=False, baseline=None):
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, ys in series:
            ax.plot(dims, ys, "o-", label=label)
        if baseline:
            _baseline_lines(ax, rows, baseline)
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")
        ax.set_xticks(dims, [str(d) for d in dims])
        ax.set(xlabel="d (embedding dimension)", ylabel=ylabel, title=f"{title}\n{sub}")
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
        if len(series) > 1 or baseline:
            ax.legend(fontsize=8)
        _save(plt, fig, out_dir, key, paths)

    per_d(
        "ppl",
        [("validation", [r["val_ppl"] for r in rows]), ("test", [r["test_ppl"] for r in rows])],
        "perplexity per BPE token",
        "Perplexity vs d (baselines: test)",
        logy=True,
        baseline="test_ppl",
    )
    per_d(
        "bpb",
        [
            ("validation", [r.get("val_bpb", math.nan) for r in rows]),
            ("test", [r.get("test_bpb", math.nan) for r in rows]),
        ],
        "bits per byte of text",
        "Bits per byte vs d (baselines: test)",
        baseline="test_bpb",
    )
    per_d("time", [("", [r["epoch_s"] for r in rows])], "seconds per epoch", "Epoch time vs d", logy=True)
    per_d(
        "memory",
        [("", [r["peak_mem_bytes"] / 2**20 for r in rows])],
        "peak memory (MiB)",
        "Peak memory vs d",
        logy=True,
    )

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for r in rows:
        curve = read_curve(out_dir / f"d{r['dim']}")
        pts = [(c["tokens"] * r["flops_per_token"], c["val_loss"]) for c in curve if "val_loss" in c]
        line = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", markersize=3, label=f"d={r['dim']}")[0]
        if curve:
            ax.plot(
                [c["tokens"] * r["flops_per_token"] for c in curve],
                smooth([c["loss"] for c in curve], 25),
                color=line.get_color(),
                alpha=0.25,
                linewidth=0.8,
            )
    _baseline_lines(ax, rows, "val_loss")
    ax.set_xscale("log")
    ax.set(
        xlabel="training FLOPs",
        ylabel="loss (nats/token)",
        title=f"Compute frontier: validation loss (dots) and train loss (faint) vs FLOPs\n{sub}",
    )
    ax.title.set_fontsize(10)
    lo = min([r["val_loss"] for r in rows] + [rows[0].get("baselines", {}).get("trigram", {}).get("val_loss", 9)])
    ax.set_ylim(lo - 0.3, math.log(rows[0]["vocab"]) + 0.3)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(plt, fig, out_dir, "frontier", paths)

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        curve = read_curve(out_dir / f"d{r['dim']}")
        if curve:
            ax.plot([c["tokens"] for c in curve], smooth([c["loss"] for c in curve], 25), label=f"d={r['dim']}")
    ax.set_xscale("log")
    ax.set(xlabel="training tokens", ylabel="training loss (nats/token)", title=f"Loss curves\n{sub}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _save(plt, fig, out_dir, "curves", paths)

    fig, ax = plt.subplots(figsize=(6, 4))
    emb = [r["embedding_params"] / 1e6 for r in rows]
    rest = [(r["params"] - r["embedding_params"]) / 1e6 for r in rows]
    xs = range(len(dims))
    ax.bar(xs, emb, label="embedding V·d")
    ax.bar(xs, rest, bottom=emb, label="rest (blocks, positions, head)")
    ax.set_xticks(list(xs), [str(d) for d in dims])
    ax.set(xlabel="d", ylabel="parameters (millions)", title=f"Parameters vs d\n{sub}")
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8)
    _save(plt, fig, out_dir, "params", paths)
    return paths


def smooth(ys: list[float], k: int = 9) -> list[float]:
    out = []
    for i in range(len(ys)):
        window = ys[max(0, i - k + 1) : i + 1]
        out.append(sum(window) / len(window))
    return out


def baseline_sentences(rows: list[dict]) -> list[str]:
    """How far each d is above or below each baseline on test perplexity and bits per byte."""
    base = rows[0].get("baselines")
    if not base:
        return []
    out = []
    for r in rows:
        parts = []
        for name in ("unigram", "bigram", "trigram"):
            b = base[name]
            pct = 100 * (r["test_ppl"] - b["test_ppl"]) / b["test_ppl"]
            parts.append(f"{abs(pct):.0f}% {'below' if pct < 0 else 'above'} the {name} ({b['test_ppl']:.1f})")
        out.append(
            f"d={r['dim']}: test perplexity {r['test_ppl']:.1f} is "
            + ", ".join(parts)
            + f"; {r.get('test_bpb', math.nan):.3f} bits/byte against the bigram's {base['bigram']['test_bpb']:.3f}."
        )
    best = min(rows, key=lambda r: r["test_ppl"])
    verdict = "beats" if best["test_ppl"] < base["bigram"]["test_ppl"] else "does NOT beat"
    out.insert(
        0,
        f"The best d on test perplexity (d={best['dim']}, {best['test_ppl']:.1f}) {verdict} the interpolated "
        f"bigram ({base['bigram']['test_ppl']:.1f}).",
    )
    return out


def findings(rows: list[dict], plan: dict | None = None) -> list[str]:
    """Plain sentences drawn from the numbers: baselines, how perplexity and cost change with d."""
    plan = plan or {}
    rows = sorted(rows, key=lambda r: r["dim"])
    dims = [r["dim"] for r in rows]
    out = baseline_sentences(rows)
    best = min(rows, key=lambda r: r["val_ppl"])
    equal = "training FLOPs" if plan.get("budget") == "compute" else "training tokens"
    out.append(f"At equal {equal}, the best validation perplexity is {best['val_ppl']:.1f} at d={best['dim']}.")
    for a, b in zip(rows, rows[1:]):
        g = 100 * (a["val_ppl"] - b["val_ppl"]) / a["val_ppl"]
        out.append(
            f"Going from d={a['dim']} to d={b['dim']} {'improves' if g > 0 else 'worsens'} validation perplexity "
            f"by {abs(g):.1f}% ({a['val_ppl']:.1f} → {b['val_ppl']:.1f}) with {b['params'] / a['params']:.2f}× "
            f"the parameters, {b['tokens_seen'] / a['tokens_seen']:.2f}× the tokens and "
            f"{b['epoch_s'] / a['epoch_s']:.2f}× the time per epoch."
        )
    if plan.get("budget") == "compute":
        out.append(
            "Under a compute budget a wider d sees fewer tokens; these figures say which d uses a fixed amount "
            "of compute best, not what d could reach with unlimited data (that is the token-matched sweep)."
        )
    over = [r["dim"] for r in rows if (r.get("mfu_fp32") or 0) > 1]
    if over:
        out.append(
            f"MFU above 100% of the fp32 peak (d={', '.join(map(str, over))}) means the peak, measured once when "
            "each process started, was measured at a busier moment than the training steps: on a shared machine "
            "the MFU figures here are not reliable."
        )
    if len(rows) >= 2:
        kt = fit_exponent(dims, [r["epoch_s"] for r in rows])
        km = fit_exponent(dims, [r["peak_mem_bytes"] for r in rows])
        kp = fit_exponent(dims, [r["params"] for r in rows])
        out.append(
            f"Epoch time grows as d^{kt:.2f}, peak memory as d^{km:.2f} and parameters as d^{kp:.2f} "
            f"over d={dims[0]}..{dims[-1]} (least-squares fit of log–log)."
        )
        if all(r.get("mem_baseline_bytes") for r in rows) and "cuda" not in rows[0]["device"]:
            above = [r["peak_mem_bytes"] - r["mem_baseline_bytes"] for r in rows]
            out.append(
                f"Peak RSS above the process's baseline (what training that d added) grows as "
                f"d^{fit_exponent(dims, above):.2f}: {fmt_bytes(above[0])} at d={dims[0]}, "
                f"{fmt_bytes(above[-1])} at d={dims[-1]}; the estimate weights+grads+Adam is "
                f"{fmt_bytes(rows[0]['train_mem_est_bytes'])} → {fmt_bytes(rows[-1]['train_mem_est_bytes'])}."
            )
    return out


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def table(rows: list[dict]) -> str:
    head = (
        "| d | params | embedding V·d (share) | tokens seen | train FLOPs | val ppl | test ppl | val bpb | test bpb "
        "| epoch s | tokens/s | MFU fp32 peak | MFU bf16 peak | peak mem | device |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in sorted(rows, key=lambda r: r["dim"]):
        lines.append(
            f"| {r['dim']} | {r['params'] / 1e6:.2f}M | {r['embedding_params'] / 1e6:.2f}M ({100 * r['embedding_share']:.0f}%) "
            f"| {r['tokens_seen']:,} | {fmt_count(r.get('train_flops', r['flops_per_token'] * r['tokens_seen']))} "
            f"| {r['val_ppl']:.1f} | {r['test_ppl']:.1f} | {r.get('val_bpb', math.nan):.3f} | {r.get('test_bpb', math.nan):.3f} "
            f"| {r['epoch_s']:.0f} | {r['tokens_per_s']:.0f} | {_pct(r.get('mfu_fp32'))} | {_pct(r.get('mfu_bf16'))} "
            f"| {fmt_bytes(r['peak_mem_bytes'])} | {r['device']} |"
        )
    return "\n".join(lines)


def baseline_table(rows: list[dict]) -> str:
    base = rows[0].get("baselines")
    if not base:
        return "(no baselines in these rows)"
    k = rows[0].get("baseline_k", {})
    lines = ["| model | val ppl | test ppl | val bpb | test bpb |", "|---|---|---|---|---|"]
    for name, b in base.items():
        lines.append(
            f"| {name} | {b['val_ppl']:.1f} | {b['test_ppl']:.1f} | {b['val_bpb']:.3f} | {b['test_bpb']:.3f} |"
        )
    return "\n".join(lines) + (
        f"\n\nInterpolation constants chosen on validation: k2={k.get('k2')}, k3={k.get('k3')} "
        "(p2 = (c(v,w) + k2·p1) / (c(v) + k2), likewise p3 over p2)."
    )


def write_report(
    rows: list[dict], out_dir: Path, plan: dict, lr_scan: str | None = None, init_run: str | None = None
) -> Path:
    out_dir = Path(out_dir)
    rows = sorted(rows, key=lambda r: r["dim"])
    plot_all(rows, out_dir, plan)
    r0 = rows[0]
    ev = r0.get("eval_tokens", {})
    peaks = (
        f"fp32 {r0.get('peak_fp32_flops', 0) / 1e9:.0f} GFLOP/s, bf16 {(r0.get('peak_bf16_flops') or 0) / 1e9:.0f} GFLOP/s"
        if r0.get("peak_fp32_flops")
        else "not recorded"
    )
    step_minutes = ", ".join(f"{r.get('train_s', 0) / 60:.1f}" for r in rows)
    mem = (
        "CUDA max_memory_allocated, reset per d"
        if "cuda" in r0["device"]
        else "the peak RSS of the process while training that d (it includes the "
        + fmt_bytes(r0.get("mem_baseline_bytes") or 0)
        + " the process held before: Python, torch, token ids)"
    )
    lines = [
        "# LM d-sweep",
        "",
        f"Corpus `{r0.get('corpus', '?')}`, V={r0['vocab']}, {r0['layers']} layers, {r0['heads']} heads, "
        f"context {r0.get('context', '?')}, batch {r0.get('batch', '?')}, tied={r0['tied']}, positions {r0['pos']}, "
        f"init {r0.get('init', 'gpt2')}; LR peak 2e-3·sqrt(128/d) unless given, linear warm-up then cosine to 10% "
        f"at the end of each d's budget; device and precision per row (bf16-head: blocks fp32, head and loss "
        "matmuls bf16).",
        "",
        f"**Budget ({plan.get('budget', '?')}):** {plan.get('budget_rule', '')}. {budget_title(plan)}. "
        f"Tokens per d: {json.dumps(plan.get('tokens_per_d', {}))} (one epoch of the train split is "
        f"{r0.get('train_tokens_per_epoch', 0):,} tokens). Probe rates (tokens/s): "
        f"{json.dumps(plan.get('probe_tokens_per_s', {}))}. Training steps took {step_minutes} min at "
        f"d={', '.join(str(r['dim']) for r in rows)}.",
        "",
        f"Validation and test are scored on the first {ev.get('valid', 0):,} / {ev.get('test', 0):,} target tokens of "
        f"each split; bits per byte divide the total bits by the {r0.get('eval_bytes', {}).get('valid', 0):,} / "
        f"{r0.get('eval_bytes', {}).get('test', 0):,} UTF-8 bytes those tokens decode to. `epoch s` is the measured "
        f"training time scaled to one pass over the train split. MFU divides achieved FLOP/s (3× forward matmul "
        f"FLOPs) by 2048³ matmul peaks measured in the same process: {peaks}. Peak memory is {mem}.",
        "",
        table(rows),
        "",
        "## Baselines (train split counts, same BPE tokens, same targets)",
        "",
        baseline_table(rows),
        "",
        "## Findings",
        "",
    ]
    lines += [f"- {s}" for s in findings(rows, plan)]
    lines += extra_sections(lr_scan, init_run, rows)
    lines += ["", "## Plots", ""] + [f"![{k}]({v})" for k, v in PLOTS.items()]
    lines += ["", "## Generated text (top-k 40, temperature 0.8)", ""]
    for r in rows:
        for s in r.get("samples", [])[:3]:
            lines.append(f"- d={r['dim']}: {s}")
    path = out_dir / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def extra_sections(lr_scan: str | None, init_run: str | None, rows: list[dict]) -> list[str]:
    """The LR-scan verdicts (comma-separated scan folders) and an init comparison (comma-separated run folders)."""
    out = []
    scans = [Path(p) for p in (lr_scan or "").split(",") if p and (Path(p) / "lr_scan.json").exists()]
    if scans:
        out += ["", "## Learning-rate scan", ""]
        for folder in scans:
            scan = json.loads((folder / "lr_scan.json").read_text())
            out += [scan.get("budget_rule", ""), "", scan.get("table", ""), ""]
            out += [f"- {v}" for v in scan.get("verdicts", [])] + [""]
    runs = [
        json.loads((Path(p) / "result.json").read_text())
        for p in (init_run or "").split(",")
        if p and (Path(p) / "result.json").exists()
    ]
    if runs:
        out += [
            "",
            "## Initialisation (same d, same budget)",
            "",
            "| d | init | LR | tokens | val ppl | test ppl | test bpb |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in runs:
            out.append(
                f"| {r['dim']} | {r.get('init', 'gpt2')} | {r['lr']:.2e} | {r['tokens_seen']:,} | {r['val_ppl']:.1f} | "
                f"{r['test_ppl']:.1f} | {r.get('test_bpb', math.nan):.3f} |"
            )
    return out
