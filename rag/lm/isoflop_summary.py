"""The files of an iso-FLOP grid folder (rag.lm.isoflop): the finished runs' rows, runs.csv, isoflop.json (rows, fits
at the LR rule and at each width's best LR, the LR table, the seed comparisons), the plots and summary.md."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rag.lm.isoflop_fit import at_best_lr, at_most_seeded, at_rule, grid_fits, lr_table, seed_comparison


def collect(out: str | Path) -> list[dict]:
    """One row per finished run in a grid folder; a folder pruned to its summary (isoflop.json, no run folders, as
    docs/lm keeps it) gives the rows that summary holds."""
    out = Path(out)
    results = sorted(out.glob("C*/d*-s*-x*/result.json"))
    if not results and (out / "isoflop.json").exists():
        return json.loads((out / "isoflop.json").read_text()).get("rows", [])
    rows = []
    for res in results:
        run = res.parent
        r = json.loads(res.read_text())
        _, s, x = run.name[1:].split("-")
        prov = json.loads((run / "provenance.json").read_text()) if (run / "provenance.json").exists() else {}
        budget = float(run.parent.name[1:])
        rows.append(
            {
                "budget": budget,
                "dim": r["dim"],
                "heads": r["heads"],
                "seed": int(s[1:]),
                "factor": float(x[1:]),
                "lr": r["lr"],
                "params": r["params"],
                "tokens": r["tokens_seen"],
                "epochs": round(r["tokens_seen"] / r["train_tokens_per_epoch"], 2)
                if r.get("train_tokens_per_epoch")
                else None,
                "train_flops": r["train_flops"],
                "steps": r["steps"],
                "total_steps": r.get("total_steps"),
                "warmup_steps": r["warmup_steps"],
                "best_step": r.get("best_step"),
                "stopped_early_at": r.get("stopped_early_at"),
                "val_loss": r["val_loss"],
                "test_loss": r["test_loss"],
                "val_bpb": r["val_bpb"],
                "test_bpb": r["test_bpb"],
                "test_ppl": r["test_ppl"],
                "precision": r.get("precision"),
                "train_s": r["train_s"],
                "wall_s": prov.get("wall_s"),
                "threads": prov.get("threads"),
                "parallel": prov.get("parallel"),
                "resumed": prov.get("resumed"),
                "loadavg_start": (prov.get("loadavg_start") or [None])[0],
                "loadavg_end": (prov.get("loadavg_end") or [None])[0],
                "run": f"{run.parent.name}/{run.name}",
            }
        )
    return rows


RUN_COLUMNS = (
    "budget",
    "dim",
    "heads",
    "seed",
    "factor",
    "lr",
    "params",
    "tokens",
    "epochs",
    "train_flops",
    "steps",
    "total_steps",
    "warmup_steps",
    "best_step",
    "stopped_early_at",
    "val_loss",
    "test_loss",
    "val_bpb",
    "test_bpb",
    "test_ppl",
    "precision",
    "train_s",
    "wall_s",
    "threads",
    "parallel",
    "resumed",
    "loadavg_start",
    "loadavg_end",
    "run",
)


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
    flops = settings.get("mode", "flops") == "flops"
    scanned = any(r["factor"] != 1.0 for r in rows)
    data = {
        "settings": settings,
        "rows": rows,
        "fits": grid_fits(at_rule(rows)) if flops else {},
        "fits_best_lr": grid_fits(at_best_lr(rows)) if flops and scanned else {},
        "lr_check": lr_table(rows),
        "baselines": baselines,
        "seed_comparison": seed_comparison(at_rule(rows)),
        "seed_comparison_best_lr": seed_comparison(at_best_lr(rows)) if scanned else [],
        "seed_comparison_most_seeded_lr": seed_comparison(at_most_seeded(rows)) if scanned else [],
        "wall_s_total": round(sum(r["wall_s"] or 0 for r in rows), 1),
    }
    (out / "isoflop.json").write_text(json.dumps(data, indent=1))
    if rows:
        from rag.lm.isoflop_plots import plot_grid

        plot_grid(data, out)
    return data


def fit_lines(data: dict) -> list[str]:
    """One line per budget and LR choice: the fitted optimum and its interval (what `rag lm isoflop` prints)."""
    lines = []
    for which, fits in (("LR rule", data.get("fits")), ("best LR per d", data.get("fits_best_lr"))):
        for key, e in sorted((fits or {}).get("budgets", {}).items(), key=lambda kv: float(kv[0])):
            f = e.get("val", {})
            lines.append(
                f"C={float(key):.3g}, {which}: "
                + (
                    f"d_opt {f['d_opt']:.0f} (95%: {f['d_lo']:.0f} to {f['d_hi']:.0f}), min val bpb {f['y_opt']:.4f} "
                    f"(95%: {f['y_lo']:.4f} to {f['y_hi']:.4f}){'' if f['bracketed'] else ' (NOT bracketed by 2 points each side)'}"
                    if f.get("ok")
                    else f.get("why", "fewer than 3 d")
                )
            )
    return lines
