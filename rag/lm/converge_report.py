"""Where a transformer passes Kneser-Ney: from the to-convergence summaries (one d<D>.json per width), the training
FLOPs at which each width's test bits per byte first drop below the interpolated modified Kneser-Ney 3- and 4-gram,
on the whole test split (the same targets and bytes: checked), and the plot of test bits per byte against FLOPs.

The crossing is reported twice: at the first validation point below the line (an upper bound on the FLOPs needed,
the figure a run can show), and interpolated linearly in log FLOPs between that point and the one before it.

A width whose dropout and weight decay were scanned keeps every run of its scan in scan/ (d<D>-dropout<X>-wd<Y>.json,
the same epoch cap and schedule; a longer cap of a setting as d<D>-dropout<X>-wd<Y>-cap<E>.json); the run with the
lowest best validation bits per byte is the width's row in the table, its crossings and the plot (the test split
chooses nothing).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from rag.config import RagError

PLOT = "test_bpb_vs_flops.png"
SCAN = "scan"  # the per-width regularisation scans: scan/d<D>-dropout<X>-wd<Y>.json
KN_STYLE = {"kn3": "--", "kn4": "-."}


def load_summaries(folder: str | Path, unfinished: bool = False, allow_empty: bool = False) -> list[dict]:
    """The per-width summaries (d<D>.json, or d<D>/summary.json of a run folder), smallest d first; with unfinished,
    also run folders still training (summarised from their curve, marked finished: False)."""
    from rag.lm.converge import summarize_unfinished

    folder = Path(folder)
    files = sorted(folder.glob("d*.json")) + sorted(folder.glob("d*/summary.json"))
    running = []
    if unfinished:
        running = [
            summarize_unfinished(run)
            for run in sorted(folder.glob("d*"))
            if run.is_dir() and not (run / "summary.json").exists() and (run / "ckpt").exists()
        ]
    if not files and not running and not allow_empty:
        raise RagError(
            f"no to-convergence summaries in {folder} (expected d<D>.json or d<D>/summary.json); "
            "run rag lm sweep --to-convergence first"
        )
    rows = []
    for f in files:
        try:
            rows.append(json.loads(f.read_text()))
        except ValueError as exc:
            raise RagError(f"{f} is not valid JSON ({exc}); restore it from git or rerun the width") from exc
    return sorted(rows + running, key=lambda s: s["dim"])


def load_scans(folder: str | Path) -> dict[int, list[dict]]:
    """Each scanned width's runs (folder/scan/d*.json), by dropout, weight decay, then epoch cap; {} when nothing was
    scanned."""
    by_dim: dict[int, list[dict]] = {}
    for f in sorted((Path(folder) / SCAN).glob("d*.json")):
        try:
            run = json.loads(f.read_text())
        except ValueError as exc:
            raise RagError(f"{f} is not valid JSON ({exc}); restore it from git or rerun that setting") from exc
        by_dim.setdefault(run["dim"], []).append(run)
    return {
        d: sorted(runs, key=lambda s: (s["dropout"], s["weight_decay"], s["max_epochs"]))
        for d, runs in sorted(by_dim.items())
    }


def chosen(runs: list[dict]) -> dict:
    """The scan's choice: the lowest best validation bits per byte (rounded to 4 decimals; a tie goes to the lower
    validation perplexity, which carries one more digit)."""
    return min(runs, key=lambda s: (s["best_val_bpb"], s["best_val_ppl"]))


def with_scans(summaries: list[dict], scans: dict[int, list[dict]]) -> list[dict]:
    """The summaries with each scanned width's chosen run; a width with both a summary and a scan is refused."""
    both = sorted({s["dim"] for s in summaries} & set(scans))
    if both:
        raise RagError(
            f"d={both[0]} has both d{both[0]}.json and runs in {SCAN}/: keep its runs in {SCAN}/ only "
            "(the scan's choice becomes the width's row)"
        )
    return sorted(summaries + [chosen(runs) for runs in scans.values()], key=lambda s: s["dim"])


def scan_table(scans: dict[int, list[dict]]) -> str:
    """One row per scanned setting; the chosen one in bold."""
    head = (
        "| d | dropout | weight decay | best val bits/byte | test bits/byte | peak epoch | chosen |\n"
        "|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for runs in scans.values():
        pick = chosen(runs)
        for s in runs:
            mark = "**yes**" if s is pick else ""
            rows.append(
                f"| {s['dim']} | {s['dropout']:g} | {s['weight_decay']:g} | {s['best_val_bpb']:.3f} | "
                f"{s['test_bpb']:.3f} | {s['peak_epoch']:g} of {s['max_epochs']:g} | {mark} |"
            )
    return head + "\n".join(rows) + "\n"


def load_kn(path: str | Path, summaries: list[dict]) -> dict:
    """Whole-split KN figures; refused unless they were scored on the summaries' targets and bytes."""
    path = Path(path)
    if not path.exists():
        raise RagError(
            f"{path} not found; write the whole-split Kneser-Ney figures with rag lm kn --eval-tokens 0 --json > {path}"
        )
    kn = json.loads(path.read_text())
    for s in summaries:
        if kn["targets"]["test"] != s["eval_targets"]["test"] or kn["bytes"]["test"] != s["eval_bytes"]["test"]:
            raise RagError(
                f"{path} scores {kn['targets']['test']} test targets ({kn['bytes']['test']} bytes), d={s['dim']} "
                f"scored {s['eval_targets']['test']} ({s['eval_bytes']['test']} bytes): not the same targets"
            )
    return kn


def crossing(curve: list[dict], line: float) -> dict | None:
    """First point of the curve with test bits per byte below `line`, and the log-FLOPs interpolated crossing."""
    prev = None
    for p in curve:
        if p.get("test_bpb") is not None and p["test_bpb"] < line:
            at = p["flops"]
            if prev is not None and prev["test_bpb"] > line:
                t = (prev["test_bpb"] - line) / (prev["test_bpb"] - p["test_bpb"])
                at = math.exp(math.log(prev["flops"]) + t * (math.log(p["flops"]) - math.log(prev["flops"])))
            return {"flops_first_point": p["flops"], "epoch_first_point": p["epoch"], "flops_interpolated": at}
        prev = p
    return None


def crossings(summaries: list[dict], kn: dict, orders=("kn3", "kn4")) -> list[dict]:
    rows = []
    for s in summaries:
        row = {"dim": s["dim"], "best_test_bpb": s["test_bpb"]}
        for name in orders:
            row[name] = crossing(s["curve"], kn["models"][name]["test_bpb"])
        rows.append(row)
    return rows


def fmt_crossing(c: dict | None) -> str:
    if c is None:
        return "not reached"
    return f"{c['flops_interpolated']:.2g} FLOPs (first point below: {c['flops_first_point']:.2g}, epoch {c['epoch_first_point']:g})"


def plot(summaries: list[dict], kn: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for s in summaries:
        pts = [p for p in s["curve"] if p.get("test_bpb") is not None]
        ax.plot(
            [p["flops"] for p in pts], [p["test_bpb"] for p in pts], marker="o", markersize=3, label=f"d={s['dim']}"
        )
    for name, style in KN_STYLE.items():
        if name in kn["models"]:
            v = kn["models"][name]["test_bpb"]
            ax.axhline(v, color="grey", linestyle=style, linewidth=1, label=f"KN {name[2:]}-gram ({v:.3f})")
    ax.set_xscale("log")
    ax.set_xlabel("training FLOPs")
    ax.set_ylabel("test bits per byte (whole split)")
    ax.set_title(
        "Test bits/byte vs training FLOPs (each width until it stops improving or hits its epoch cap)", fontsize=9
    )
    top = max(kn["models"]["kn3"]["test_bpb"] + 0.4, min(p["test_bpb"] for s in summaries for p in s["curve"]) + 0.1)
    ax.set_ylim(top=top)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fmt_mem(nbytes: int | None) -> str:
    return "not measured (run unfinished)" if nbytes is None else f"{nbytes / 2**20:.0f} MiB"


def table(summaries: list[dict], kn: dict) -> str:
    """The per-width table (whole validation and test splits), KN lines under it."""
    head = (
        "| d | params (embedding + rest) | dropout / wd | best val ppl | best val bits/byte | test ppl | "
        "test bits/byte | peak epoch | tokens to best | FLOPs to best | s/epoch | peak mem |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| {s['dim']} | {s['embedding_params'] / 1e6:.2f}M + {s['rest_params'] / 1e6:.2f}M | "
        f"{s['dropout']:g} / {s['weight_decay']:g} | {s['best_val_ppl']:.1f} | {s['best_val_bpb']:.3f} | "
        f"{s['test_ppl']:.1f} | {s['test_bpb']:.3f} | {s['peak_epoch']:g} of {s['max_epochs']:g} | "
        f"{s['tokens_to_best'] / 1e6:.1f}M | {s['flops_to_best']:.2g} | {s['epoch_s']:.0f} | "
        f"{fmt_mem(s['peak_mem_bytes'])} |"
        for s in summaries
    ]
    kn_rows = [
        f"| KN {name[2:]}-gram | counts | | {m['val_ppl']:.1f} | {m['val_bpb']:.3f} | {m['test_ppl']:.1f} | "
        f"{m['test_bpb']:.3f} | | | | | |"
        for name, m in kn["models"].items()
        if name in KN_STYLE
    ]
    return head + "\n".join(rows + kn_rows) + "\n"


def write_converge_report(results: str | Path, kn_path: str | Path, out: str | Path, unfinished: bool = False) -> dict:
    scans = load_scans(results)
    summaries = with_scans(load_summaries(results, unfinished, allow_empty=bool(scans)), scans)
    kn = load_kn(kn_path, summaries)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = crossings(summaries, kn)
    lines = [
        f"d={r['dim']}: best test {r['best_test_bpb']:.4f} bits/byte; passes KN 3-gram "
        f"({kn['models']['kn3']['test_bpb']:.4f}) at {fmt_crossing(r['kn3'])}; KN 4-gram "
        f"({kn['models']['kn4']['test_bpb']:.4f}) at {fmt_crossing(r['kn4'])}"
        for r in rows
    ]
    data = {
        "what": "training FLOPs at which each width's test bits/byte (whole test split) first drops below "
        "interpolated modified Kneser-Ney; flops_first_point: the first validation point below the line",
        "kn_test_bpb": {name: kn["models"][name]["test_bpb"] for name in KN_STYLE},
        "test_targets": kn["targets"]["test"],
        "test_bytes": kn["bytes"]["test"],
        "crossings": rows,
        "unfinished": [s["dim"] for s in summaries if not s.get("finished", True)],
        "scans": {
            str(d): [
                {k: r[k] for k in ("dropout", "weight_decay", "max_epochs", "best_val_bpb", "test_bpb", "peak_epoch")}
                for r in runs
            ]
            for d, runs in scans.items()
        },
    }
    json_path = out / "crossings.json"
    json_path.write_text(json.dumps(data, indent=1) + "\n")
    plot_path = plot(summaries, kn, out / PLOT)
    return {
        **data,
        "lines": lines,
        "table": table(summaries, kn),
        "scan_table": scan_table(scans) if scans else "",
        "json": str(json_path),
        "plot": str(plot_path),
    }
