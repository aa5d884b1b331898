"""Plots and summary.md of an iso-FLOP (or token-matched) grid folder; see rag.lm.isoflop."""

from __future__ import annotations

import math
from pathlib import Path

from rag.lm.stats import fmt_count


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_grid(data: dict, out: Path) -> None:
    mode = data["settings"].get("mode", "flops")
    if mode == "flops":
        plot_isoflop(data, out)
        plot_scaling(data, out)
        if data["lr_check"]:
            plot_lr(data, out)
    else:
        plot_tokens(data, out)
    (out / "summary.md").write_text(summary_md(data, out))


def _base_lines(ax, data: dict, split: str = "test") -> None:
    base = (data.get("baselines") or {}).get("models", {})
    for name, style in (("kn3", ":"), ("kn4", "--")):
        if name in base:
            ax.axhline(
                base[name][f"{split}_bpb"],
                color="grey",
                linestyle=style,
                linewidth=1,
                label=f"modified KN {name[-1]}-gram ({base[name][f'{split}_bpb']:.3f})",
            )


def plot_isoflop(data: dict, out: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    _draw_fits(ax, data, data["fits"], "o", "-", "")
    _draw_fits(ax, data, data.get("fits_best_lr") or {}, "s", "--", ", best LR per d", hollow=True)
    ax.set_xscale("log", base=2)
    all_d = [r["dim"] for r in data["rows"]]
    if all_d:
        ax.set_xlim(min(all_d) / 1.3, max(all_d) * 1.3)
    ax.set(
        xlabel="embedding dimension d (log scale)",
        ylabel="validation bits per byte",
        title="Iso-FLOP curves: validation bpb vs d at fixed training FLOPs\nfilled, solid: LR rule; open, dashed: "
        "best LR per d; star, bar: fitted optimum, 95% interval",
    )
    _save(plt, fig, ax, out / "isoflop.png")


def _draw_fits(ax, data: dict, fits: dict, marker: str, line: str, suffix: str, hollow: bool = False) -> None:
    """One grid_fits result on the iso-FLOP axes: points (seed sd bars, single seeds faint), fit, optimum."""
    import numpy as np

    plt = _plt()
    budgets = fits.get("budgets", {})
    for i, (key, e) in enumerate(sorted(budgets.items(), key=lambda kv: float(kv[0]))):
        color = plt.cm.plasma(0.85 * i / max(1, len(budgets) - 1))
        pts = e["points"]
        ds = [p["dim"] for p in pts]
        ys = [p["val_bpb"] for p in pts]
        err = [p["val_sd"] or 0 for p in pts]
        ax.errorbar(
            ds,
            ys,
            yerr=err,
            fmt=marker,
            color=color,
            capsize=3,
            mfc="none" if hollow else color,
            label=f"C = {_c(float(key))} FLOPs{suffix}",
        )
        for r in data["rows"]:  # single seeds of multi-seed points, faint
            if r["budget"] == float(key) and any(
                p["n_seeds"] > 1 and p["dim"] == r["dim"] and p.get("factor", 1.0) == r["factor"] for p in pts
            ):
                ax.plot(r["dim"], r["val_bpb"], ".", color=color, alpha=0.35)
        fit = e.get("val", {})
        if fit.get("ok") and fit["inside_grid"]:
            a, b, c = fit["coef"]
            used = [p["dim"] for p in pts if p.get("in_fit")]
            x = np.linspace(math.log(min(used)), math.log(max(used)), 100)
            ax.plot(np.exp(x), a + b * x + c * x * x, line, color=color, linewidth=1)
            ax.errorbar(
                [fit["d_opt"]],
                [fit["y_opt"]],
                xerr=[[fit["d_opt"] - fit["d_lo"]], [fit["d_hi"] - fit["d_opt"]]],
                fmt="*",
                color=color,
                markersize=12,
                capsize=3,
                markeredgecolor="black",
            )


def plot_scaling(data: dict, out: Path) -> None:
    import numpy as np

    fits = data["fits"]
    fitted = [
        (float(k), e["val"])
        for k, e in fits.get("budgets", {}).items()
        if float(k) in fits.get("scaling", {}).get("budgets", [])
    ]
    if not fitted:
        return
    plt = _plt()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    cs = np.array([c for c, _ in fitted])
    d = np.array([f["d_opt"] for _, f in fitted])
    a1.errorbar(
        cs,
        d,
        yerr=[d - [f["d_lo"] for _, f in fitted], [f["d_hi"] for _, f in fitted] - d],
        fmt="o",
        capsize=4,
        label="fitted d_opt (95% interval)",
    )
    y = np.array([f["y_opt"] for _, f in fitted])
    a2.errorbar(
        cs,
        y,
        yerr=[y - [f["y_lo"] for _, f in fitted], [f["y_hi"] for _, f in fitted] - y],
        fmt="o",
        capsize=4,
        label="fitted min validation bpb (95%)",
    )
    grid = np.geomspace(cs.min() / 1.5, cs.max() * 1.5, 50)
    sc = fits.get("scaling", {})
    if sc.get("d_opt", {}).get("ok"):
        p = sc["d_opt"]
        a1.plot(grid, p["A"] * grid ** p["k"], "-", label=f"d_opt ∝ C^{p['k']:.2f} [{p['k_lo']:.2f}, {p['k_hi']:.2f}]")
    if sc.get("val_bpb", {}).get("ok"):
        p = sc["val_bpb"]
        a2.plot(grid, p["A"] * grid ** p["k"], "-", label=f"bpb ∝ C^{p['k']:.3f} [{p['k_lo']:.3f}, {p['k_hi']:.3f}]")
    _base_lines(a2, data, "val")
    from matplotlib.ticker import NullFormatter

    for ax, ylab in ((a1, "compute-optimal d"), (a2, "validation bits per byte at d_opt")):
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set(xlabel="training FLOPs C", ylabel=ylab)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    a1.set_yscale("log", base=2)
    fig.suptitle("What d buys: the compute-optimal d and its loss against the compute budget", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "scaling.png", dpi=110)
    plt.close(fig)


def plot_lr(data: dict, out: Path) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for row in data["lr_check"]:
        ax.plot(row["factors"], row["val_bpb"], "o-", label=f"d={row['dim']}, C={_c(row['budget'])}")
    ax.set_xscale("log", base=2)
    ax.axvline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set(
        xlabel="LR / rule 2e-3·sqrt(128/d)",
        ylabel="validation bits per byte (mean over seeds)",
        title="LR check (dotted: the rule)",
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "lr_check.png", dpi=110)
    plt.close(fig)


def plot_tokens(data: dict, out: Path) -> None:
    plt = _plt()
    rows = sorted((r for r in data["rows"] if r["factor"] == 1.0), key=lambda r: r["dim"])
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    budget = rows[0]["budget"]
    ax.plot([r["dim"] for r in rows], [r["val_bpb"] for r in rows], "o-", label="best validation bpb")
    ax.plot([r["dim"] for r in rows], [r["test_bpb"] for r in rows], "s--", label="test bpb (same checkpoint)")
    _base_lines(ax, data, "val")
    ax.set_xscale("log", base=2)
    ax.set(
        xlabel="embedding dimension d",
        ylabel="bits per byte",
        title=f"Token-matched: {fmt_count(budget)} training tokens per d, best validation checkpoint",
    )
    _save(plt, fig, ax, out / "token_curve.png")


def _save(plt, fig, ax, path: Path) -> None:
    """Small title, grid, legend; write the PNG and close the figure."""
    ax.title.set_fontsize(9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _c(budget: float) -> str:
    """1e12 -> '1e12', 3e12 -> '3e12', 1769472 -> '1.77e6'."""
    mant, exp = f"{budget:.2e}".split("e")
    return f"{mant.rstrip('0').rstrip('.')}e{int(exp)}"


def _interval(f: dict) -> str:
    return f"{f['d_opt']:.0f} [{f['d_lo']:.0f}, {f['d_hi']:.0f}]"


DATA_LIMITED = 4  # epochs from which a run is marked data-limited: it has seen the training split this many times


def epochs_cell(epochs: float | None) -> str:
    if epochs is None:
        return "-"
    return f"{epochs:.2f}" + (" (data-limited)" if epochs >= DATA_LIMITED else "")


def summary_md(data: dict, out: Path | None = None) -> str:
    s = data["settings"]
    lines = [
        f"# {'Iso-FLOP grid' if s.get('mode', 'flops') == 'flops' else 'Token-matched curve'} (generated)",
        "",
        f"Corpus {s.get('corpus')}, V={s.get('vocab')}, {s.get('layers')} layers, heads {s.get('heads')} while "
        f"d/heads >= {s.get('min_head')} (else d/{s.get('min_head')}), context {s.get('context')}, batch "
        f"{s.get('batch')}, precision {s.get('precision')} for training and evaluation, LR {s.get('lr_rule')} × "
        f"factor, warm-up {s.get('warmup_frac')} of each run then cosine to 10%, best of {s.get('slices')} "
        f"validation checkpoints ({s.get('slice_eval_tokens')} tokens each) scored on the first "
        f"{s.get('eval_tokens')} valid and test targets."
        + (f" Early stopping: patience {s['patience']}." if s.get("patience") else "")
        + f" Epochs: passes over the training split; {DATA_LIMITED} or more is marked data-limited.",
        "",
        (
            "| budget | d | heads | seed | LR× | params | tokens | epochs | steps | best step | val bpb | test bpb | "
            "wall s | parallel | load |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(data["rows"], key=lambda r: (r["budget"], r["dim"], r["factor"], r["seed"])):
        lines.append(
            f"| {_c(r['budget'])} | {r['dim']} | {r['heads']} | {r['seed']} | {r['factor']:g} | "
            f"{r['params']:,} | {r['tokens']:,} | {epochs_cell(r.get('epochs'))} | {r['steps']} | {r['best_step']} | "
            f"{r['val_bpb']:.4f} | "
            f"{r['test_bpb']:.4f} | {r['wall_s']} | {r['parallel']} | {r['loadavg_start']} |"
        )
    lines += fit_section(data.get("fits") or {}, "at the LR rule")
    lines += fit_section(
        data.get("fits_best_lr") or {},
        "at each width's best LR among those run (the lowest mean over its seeds; LR× after each d)",
    )
    lines += seed_section(data.get("seed_comparison") or [], "at the LR rule")
    lines += seed_section(data.get("seed_comparison_best_lr") or [], "at each width's best LR")
    if data.get("seed_comparison_most_seeded_lr") != data.get("seed_comparison_best_lr"):
        lines += seed_section(
            data.get("seed_comparison_most_seeded_lr") or [], "at the LR each width was run with the most seeds"
        )
    if data.get("lr_check"):
        lines += [
            "",
            "## LR check",
            "",
            "| budget | d | LR× | LR | val bpb (mean over seeds) | seeds | best | rule − best (bpb) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in data["lr_check"]:
            seeds = row.get("seeds") or [1] * len(row["factors"])
            for f, lr, v, n in zip(row["factors"], row["lrs"], row["val_bpb"], seeds):
                lines.append(
                    f"| {_c(row['budget'])} | {row['dim']} | {f:g} | {lr:.2e} | {v:.4f} | {n} | "
                    f"{'←' if f == row['best_factor'] else ''} | "
                    f"{row['rule_gap_bpb'] if f == 1.0 and row['rule_gap_bpb'] is not None else ''} |"
                )
    base = (data.get("baselines") or {}).get("models")
    if base:
        lines += [
            "",
            "## n-gram baselines (same targets and bytes)",
            "",
            "| model | val bpb | test bpb | test ppl |",
            "|---|---|---|---|",
        ]
        for name, m in base.items():
            lines.append(f"| {name} | {m['val_bpb']:.4f} | {m['test_bpb']:.4f} | {m['test_ppl']:.1f} |")
    lines += [
        "",
        (
            f"Total wall time of the runs: {data['wall_s_total'] / 60:.1f} min (measured on a shared 2-core "
            "machine under load from other work: wall times are not speed figures)."
        ),
    ]
    for png in ("isoflop.png", "scaling.png", "lr_check.png", "token_curve.png"):
        if out is None or (out / png).exists():
            lines.append(f"\n![{png[:-4]}]({png})")
    return "\n".join(lines) + "\n"


def fit_section(fits: dict, which: str) -> list[str]:
    """The fits table of one grid_fits result (which: the LR the points were trained at)."""
    if not fits.get("budgets"):
        return []
    lines = [
        "",
        (
            f"## Fits {which} (parabola in ln d of validation bpb over the best measured d and up to 2 neighbours "
            "each side; d in parentheses not fitted; 95% delta-method intervals)"
        ),
        "",
        (
            "| budget | points (d) | fitted d_opt [95%] | fitted min val bpb [95%] | test-bpb fit d_opt | "
            "bracketed (≥2 each side) | best measured |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for key, e in sorted(fits["budgets"].items(), key=lambda kv: float(kv[0])):
        f, t = e.get("val", {}), e.get("test", {})
        names = [f"{p['dim']}" + (f"×{p['factor']:g}" if p.get("factor", 1.0) != 1.0 else "") for p in e["points"]]
        dims = ",".join(n if p.get("in_fit") else f"({n})" for n, p in zip(names, e["points"]))
        if f.get("ok"):
            best = e["best_measured"]
            lines.append(
                f"| {_c(float(key))} | {dims} | {_interval(f)} | {f['y_opt']:.4f} "
                f"[{f['y_lo']:.4f}, {f['y_hi']:.4f}] | {_interval(t) if t.get('ok') else '-'} | "
                f"{'yes' if f['bracketed'] else 'NO'} ({f['points_below']} below, {f['points_above']} above)"
                f" | d={best['dim']}: val {best['val_bpb']:.4f}, test {best['test_bpb']:.4f} |"
            )
        else:
            lines.append(f"| {_c(float(key))} | {dims} | {f.get('why', 'too few points')} | | | | |")
    sc = fits.get("scaling", {})
    for name, what in (("d_opt", "d_opt(C)"), ("val_bpb", "min val bpb(C)"), ("test_bpb", "min test bpb(C)")):
        if sc.get(name, {}).get("ok"):
            p = sc[name]
            lines.append(
                f"\n{what} = {p['A']:.4g} · C^{p['k']:.4f}, exponent 95% [{p['k_lo']:.4f}, {p['k_hi']:.4f}] "
                f"over the budgets {', '.join(_c(c) for c in sc['budgets'])} (fitted optimum between "
                f"measured d; two or more each side at {', '.join(_c(c) for c in sc['bracketed']) or 'none'})."
            )
    return lines


def seed_section(comparison: list[dict], which: str) -> list[str]:
    """The Welch-test table of one seed_comparison result."""
    if not comparison:
        return []
    lines = [
        "",
        f"## Seeds {which}: is the best d distinguishable from its neighbours? (Welch t-test)",
        "",
        "| budget | best d (mean ± sd, n) | other d (mean ± sd, n) | split | difference (bpb) | p |",
        "|---|---|---|---|---|---|",
    ]
    for c in comparison:
        for split in ("val", "test"):
            v = c[split]
            lines.append(
                f"| {_c(c['budget'])} | {c['best_dim']}: {v['best_mean']:.4f} ± {v['best_sd']:.4f} "
                f"({v['n_best']}) | {c['dim']}: {v['mean']:.4f} ± {v['sd']:.4f} ({v['n']}) | {split} | "
                f"{v['diff']:+.4f} | {v['p']:.3g} |"
            )
    return lines
