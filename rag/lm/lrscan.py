"""`rag lm lr-scan`: short runs at a few multiples of the default LR rule, at a few d.

Each run gets the same training FLOPs (--flops) or tokens (--tokens), its own warm-up + cosine schedule,
and is scored on the same validation tokens. The verdict per d: is the default rule's validation loss
within 10% of the best loss found (and by how much perplexity differs)?
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from rag.config import RagError
from rag.lm.checkpoint import read_json
from rag.lm.model import flops_per_token
from rag.lm.train import TrainConfig, train

TOLERANCE = 0.10


def rule(dim: int) -> float:
    return 2e-3 * math.sqrt(128 / dim)


def scan_factors(factors: str, flops: float | None, tokens: int | None) -> list[float]:
    """The LR multiples of --factors, once exactly one of --flops and --tokens sizes the runs."""
    if (flops is None) == (tokens is None):
        raise RagError("give exactly one of --flops or --tokens for each scan run")
    try:
        mults = [float(x) for x in factors.split(",") if x.strip()]
    except ValueError as exc:
        raise RagError(f"--factors must be comma-separated numbers like 0.5,1,2, got {factors!r}") from exc
    if not mults or min(mults) <= 0:
        raise RagError(f"--factors must be positive, got {factors!r}")
    return mults


def run_scan(
    base: TrainConfig,
    dims: list[int],
    factors: list[float],
    out: str,
    flops: float | None = None,
    tokens: int | None = None,
    progress=None,
) -> dict:
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for d in dims:
        model = replace(base.model, dim=d).check()
        n_tokens = tokens or int(flops / flops_per_token(model)["train"])
        for f in factors:
            run = out_dir / f"d{d}-x{f:g}"
            if (run / "result.json").exists():
                r = read_json(run / "result.json", f"delete {run} and run the scan again")
            else:
                cfg = replace(
                    base,
                    model=model,
                    out=str(run),
                    tokens=max(n_tokens, base.batch * model.context),
                    lr=rule(d) * f,
                    samples=0,
                    resume=(run / "ckpt").exists(),
                )
                r = train(cfg, progress=progress)
            results.append(
                {
                    "dim": d,
                    "factor": f,
                    "lr": rule(d) * f,
                    "tokens": r["tokens_seen"],
                    "val_loss": r["val_loss"],
                    "val_ppl": r["val_ppl"],
                }
            )
    verdicts, lines = [], ["| d | LR factor | LR | tokens | val loss | val ppl |", "|---|---|---|---|---|---|"]
    for d in dims:
        mine = sorted((r for r in results if r["dim"] == d), key=lambda r: r["factor"])
        for r in mine:
            lines.append(
                f"| {d} | {r['factor']:g} | {r['lr']:.2e} | {r['tokens']:,} | {r['val_loss']:.4f} | {r['val_ppl']:.1f} |"
            )
        best = min(mine, key=lambda r: r["val_loss"])
        default = next((r for r in mine if r["factor"] == 1), None)
        if default is None:
            verdicts.append(
                f"d={d}: best LR {best['lr']:.2e} (×{best['factor']:g}); the scan did not include the rule itself"
            )
            continue
        gap = default["val_loss"] / best["val_loss"] - 1
        ok = gap <= TOLERANCE
        edge = (
            " (the best is at the edge of the scan: a wider scan may find better)"
            if best is not default and best["factor"] in (min(factors), max(factors))
            else ""
        )
        verdicts.append(
            f"d={d}: the rule 2e-3·sqrt(128/d) = {default['lr']:.2e} gives val loss {default['val_loss']:.4f} "
            f"(ppl {default['val_ppl']:.1f}); the best found is ×{best['factor']:g} = {best['lr']:.2e} with "
            f"{best['val_loss']:.4f} (ppl {best['val_ppl']:.1f}): the rule is {100 * gap:.1f}% above the best "
            f"loss, {'within' if ok else 'NOT within'} {100 * TOLERANCE:.0f}%{edge}."
        )
    budget = (
        f"every run sees {tokens:,} tokens"
        if tokens
        else f"every run gets {flops:.3g} training FLOPs (compute-matched across d)"
    )
    scan = {
        "dims": dims,
        "factors": factors,
        "budget_rule": f"LR scan: {budget}; warm-up + cosine per run.",
        "results": results,
        "verdicts": verdicts,
        "table": "\n".join(lines),
    }
    (out_dir / "lr_scan.json").write_text(json.dumps(scan, indent=1))
    report = out_dir / "lr_scan.md"
    report.write_text(
        "# LR scan\n\n"
        + scan["budget_rule"]
        + "\n\n"
        + scan["table"]
        + "\n\n"
        + "\n".join(f"- {v}" for v in verdicts)
        + "\n"
    )
    plot_scan(results, dims, out_dir, scan["budget_rule"])
    scan["report"] = str(report)
    return scan


def plot_scan(results: list[dict], dims: list[int], out_dir: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for d in dims:
        mine = sorted((r for r in results if r["dim"] == d), key=lambda r: r["lr"])
        ax.plot([r["lr"] for r in mine], [r["val_loss"] for r in mine], "o-", label=f"d={d}")
        ax.axvline(rule(d), linestyle=":", color=ax.lines[-1].get_color(), linewidth=1)
    ax.set_xscale("log")
    ax.set(
        xlabel="peak learning rate (dotted: the default rule)",
        ylabel="validation loss (nats/token)",
        title=f"LR scan\n{title}",
    )
    ax.title.set_fontsize(9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "lr_scan.png", dpi=110)
    plt.close(fig)
