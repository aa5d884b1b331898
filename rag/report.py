"""Write a retrieval evaluation to disk: results.csv, results.json, five PNG plots and report.md.

Rows are plain dicts with the CSV columns below (plus extras such as ``all_gold@10`` that go to JSON).
Every sentence in the report is generated from the numbers in the rows.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

COLUMNS = [
    "dataset", "encoder", "reduce", "dim", "index", "retriever", "device",
    "ndcg@10", "recall@10", "recall@100", "mrr@10", "ann_recall@10",
    "encode_ms_p50", "encode_ms_p95", "search_ms_p50", "search_ms_p95",
    "batch_qps", "index_bytes", "bytes_per_vector", "build_s",
    # added by issue 11 (the columns above keep their order)
    "code_bytes", "ndcg@10_share", "vs_pca_ndcg@10", "vs_pca_ci_low", "vs_pca_ci_high",
]
PLOTS = {
    "ndcg_vs_dim.png": "nDCG@10 against d (dense, flat index); BM25 and hybrid as reference lines",
    "latency_vs_dim.png": "single-query search latency p50 against d, per index kind",
    "bytes_vs_dim.png": "index size on disk against d, per index kind (log scale)",
    "quality_vs_bytes.png": "nDCG@10 against code bytes per vector (fixed tables left out), Pareto front marked "
                            "and labelled",
    "ann_recall_vs_qps.png": "ANN recall@10 against batch QPS, approximate kinds",
}
KEEP_SHARE = 0.95  # "smallest d that keeps 95% of full-width nDCG@10"
DIVERGE_GAP = 0.01  # truncation and PCA "diverge" once nDCG@10 differs by more than this


# ---------------------------------------------------------------- selecting rows

def curves(rows, retriever="dense", index="flat") -> dict[tuple[str, str], list[dict]]:
    """(encoder, reduce) -> rows sorted by d, for one retriever and index kind."""
    out: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        if r["retriever"] == retriever and r["index"] == index and r["dim"] != "":
            out.setdefault((r["encoder"], r["reduce"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["dim"]) for k, v in out.items()}


def bm25_row(rows):
    return next((r for r in rows if r["retriever"] == "bm25"), None)


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of points (cost, quality) that no other point beats on both (lower cost, higher quality)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], float("-inf")
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


# ---------------------------------------------------------------- sentences from numbers

def full_width_reference(curve_by_reducer: dict[str, list[dict]]) -> dict:
    """The encoder's own vectors: the widest d, with an identity reducer (pca/truncate) when there is one."""
    width = max(r["dim"] for curve in curve_by_reducer.values() for r in curve)
    at_width = {red: r for red, curve in curve_by_reducer.items() for r in curve if r["dim"] == width}
    for red in ("pca", "truncate"):
        if red in at_width:
            return at_width[red]
    return max(at_width.values(), key=lambda r: r["ndcg@10"])


def smallest_dim_keeping(rows, share: float = KEEP_SHARE) -> list[dict]:
    """Per encoder × reducer (dense, flat): the smallest d whose nDCG@10 keeps `share` of the encoder's own
    full-width nDCG@10 (its vectors unreduced); dim is None where the reducer never gets there."""
    by_encoder: dict[str, dict[str, list[dict]]] = {}
    for (enc, red), curve in curves(rows).items():
        by_encoder.setdefault(enc, {})[red] = curve
    found = []
    for enc, by_red in by_encoder.items():
        ref = full_width_reference(by_red)
        target = share * ref["ndcg@10"]
        for red, curve in by_red.items():
            keep = next((r for r in curve if r["ndcg@10"] >= target), None)
            best = max(curve, key=lambda r: r["ndcg@10"])
            found.append({"encoder": enc, "reduce": red, "full_dim": ref["dim"], "full_ndcg": ref["ndcg@10"],
                          "dim": keep["dim"] if keep else None, "ndcg": keep["ndcg@10"] if keep else None,
                          "best_dim": best["dim"], "best_ndcg": best["ndcg@10"]})
    return found


def keep_sentences(rows, share: float = KEEP_SHARE) -> list[str]:
    """One sentence per encoder: the smallest d (over its reducers) that keeps `share` of full-width nDCG@10."""
    by_encoder: dict[str, list[dict]] = {}
    for f in smallest_dim_keeping(rows, share):
        by_encoder.setdefault(f["encoder"], []).append(f)
    out = []
    for enc, found in by_encoder.items():
        reached = [f for f in found if f["dim"] is not None]
        best = min(reached, key=lambda f: (f["dim"], -f["ndcg"]))
        others = [f"{f['reduce']} d={f['dim']}" for f in reached if f is not best]
        others += [f"{f['reduce']} never does (best {f['best_ndcg']:.3f} at d={f['best_dim']})"
                   for f in found if f["dim"] is None]
        compare = "above" if best["ndcg"] > best["full_ndcg"] else "of"
        out.append(
            f"**{enc}**: d={best['dim']} ({best['reduce']}) keeps {share:.0%} of the full-width nDCG@10 "
            f"({best['ndcg']:.3f} {compare} {best['full_ndcg']:.3f} at d={best['full_dim']})"
            + (f"; other reducers: {', '.join(others)}." if others else ".")
        )
    return out


def divergence_sentences(rows, gap: float = DIVERGE_GAP) -> list[str]:
    """Where truncation and PCA part ways, per encoder: the widest d where they differ by more than `gap`."""
    c = curves(rows)
    out = []
    for enc in sorted({e for e, _ in c}):
        pca = {r["dim"]: r["ndcg@10"] for r in c.get((enc, "pca"), [])}
        trunc = {r["dim"]: r["ndcg@10"] for r in c.get((enc, "truncate"), [])}
        common = sorted(set(pca) & set(trunc))
        if not common:
            continue
        diffs = {d: pca[d] - trunc[d] for d in common}
        apart = [d for d in common if abs(diffs[d]) > gap]
        widest = max(common, key=lambda d: abs(diffs[d]))
        if not apart:
            out.append(f"**{enc}**: truncation and PCA stay within {gap:.2f} nDCG@10 of each other at every d "
                       f"tested ({', '.join(map(str, common))}).")
            continue
        leader = "PCA" if diffs[widest] > 0 else "truncation"
        out.append(
            f"**{enc}**: truncation and PCA diverge (gap > {gap:.2f}) from d={max(apart)} down; the largest gap is "
            f"{abs(diffs[widest]):.3f} at d={widest}, where {leader} leads "
            f"(PCA {pca[widest]:.3f}, truncation {trunc[widest]:.3f})."
        )
    return out


# ---------------------------------------------------------------- tables

def _fmt(v, digits=3):
    if v == "" or v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def markdown_table(rows, columns) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def main_table(rows, dataset: str) -> str:
    """nDCG@10 by d (rows) and encoder/reducer (columns), dense flat; then BM25 and hybrid at full width."""
    c = curves(rows)
    keys = list(c)
    dims = sorted({r["dim"] for curve in c.values() for r in curve})
    head = ["d"] + [f"{e} {r}" for e, r in keys]
    lines = [f"nDCG@10 on {dataset} (dense retrieval, flat index):", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for d in dims:
        cells = [str(d)]
        for k in keys:
            hit = next((r for r in c[k] if r["dim"] == d), None)
            cells.append(f"{hit['ndcg@10']:.3f}" if hit else "")
        lines.append("| " + " | ".join(cells) + " |")
    ref = []
    b = bm25_row(rows)
    if b:
        ref.append({"system": "BM25", **b})
    for retriever in ("dense", "hybrid"):
        seen = set()  # at full width pca and truncate are the identity: show each encoder once
        for (enc, red), curve in curves(rows, retriever=retriever).items():
            full = max(curve, key=lambda r: r["dim"])
            if enc in seen and red in ("pca", "truncate"):
                continue
            seen.add(enc)
            label = f"{enc} d={full['dim']}" + ("" if red in ("pca", "truncate") else f" ({red})")
            ref.append({"system": f"{retriever}: {label}" + (" + BM25" if retriever == "hybrid" else ""), **full})
    if ref:
        lines += ["", markdown_table(ref, ["system", "ndcg@10", "recall@10", "recall@100", "mrr@10"])]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- plots

def write_plots(rows, out_dir: Path) -> list[str]:
    """Draw the five PNGs into out_dir; return their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dense = [r for r in rows if r["retriever"] == "dense" and r["dim"] != ""]
    kinds = sorted({r["index"] for r in dense})
    b = bm25_row(rows)
    for draw, name in ((plot_ndcg_vs_dim, "ndcg_vs_dim.png"), (plot_cost_vs_dim, ""),
                       (plot_quality_vs_bytes, "quality_vs_bytes.png"), (plot_recall_vs_qps, "ann_recall_vs_qps.png")):
        for fig, file_name in draw(plt, rows, dense, kinds, b, name):
            fig.tight_layout()
            fig.savefig(out_dir / file_name, dpi=110)
            plt.close(fig)
    return list(PLOTS)


def plot_ndcg_vs_dim(plt, rows, dense, kinds, b, name):
    """nDCG@10 vs d: colour = encoder, line style = reducer; hybrid (first reducer) as faint reference lines."""
    fig, ax = plt.subplots(figsize=(9, 5))
    encoders = list(dict.fromkeys(e for e, _ in curves(rows)))
    colour = {e: f"C{i % 10}" for i, e in enumerate(encoders)}
    styles = {"pca": "-", "truncate": "--", "whiten": "-.", "abtt": ":"}
    for (enc, red), curve in curves(rows).items():
        ax.plot([r["dim"] for r in curve], [r["ndcg@10"] for r in curve], marker="o", ms=4, color=colour[enc],
                ls=styles.get(red, "-"), label=f"{enc} {red}")
    shown = set()
    for (enc, red), curve in curves(rows, retriever="hybrid").items():
        if enc in shown:
            continue
        shown.add(enc)
        ax.plot([r["dim"] for r in curve], [r["ndcg@10"] for r in curve], ls=":", marker="x", ms=4, alpha=0.6,
                color=colour.get(enc, "grey"), label=f"hybrid: {enc} {red} + BM25")
    if b:
        ax.axhline(b["ndcg@10"], color="black", ls="--", label=f"BM25 ({b['ndcg@10']:.3f})")
    _dim_axis(ax, rows)
    ax.set_ylabel("nDCG@10")
    ax.set_title("Retrieval quality against d (dense, flat index)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    yield fig, name


def plot_cost_vs_dim(plt, rows, dense, kinds, b, _name):
    """Latency and bytes vs d, one line per kind, for the encoder × reducer that ran the most kinds."""
    enc, red = _encoder_with_most_kinds(dense)
    for name, col, ylabel, logy in (("latency_vs_dim.png", "search_ms_p50", "search p50 (ms / query)", True),
                                    ("bytes_vs_dim.png", "index_bytes", "index bytes on disk", True)):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for kind in kinds:
            sel = sorted((r for r in dense if r["index"] == kind and r["encoder"] == enc and r["reduce"] == red),
                         key=lambda r: r["dim"])
            if sel:
                ax.plot([r["dim"] for r in sel], [r[col] for r in sel], marker="o", label=kind)
        ax.set_title(f"{enc} ({red})")
        if b and col == "search_ms_p50":
            ax.axhline(b[col], color="black", ls="--", label="BM25")
        if b and col == "index_bytes":
            ax.axhline(b[col], color="black", ls="--", label="BM25")
        _dim_axis(ax, rows)
        if logy:
            ax.set_yscale("log")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
        _legend(ax)
        yield fig, name


def plot_quality_vs_bytes(plt, rows, dense, kinds, b, name):
    """Quality vs bytes per vector, with the Pareto front."""
    fig, ax = plt.subplots(figsize=(8, 5))
    cost = "code_bytes" if all(r.get("code_bytes", "") != "" for r in dense) else "bytes_per_vector"
    pts = [(r[cost], r["ndcg@10"]) for r in dense]
    for kind in kinds:
        sel = [r for r in dense if r["index"] == kind]
        ax.scatter([r[cost] for r in sel], [r["ndcg@10"] for r in sel], s=18, alpha=0.7, label=kind)
    front_rows = sorted((dense[i] for i in pareto_front(pts)), key=lambda r: r[cost])
    if front_rows:
        ax.step([r[cost] for r in front_rows], [r["ndcg@10"] for r in front_rows], where="post", color="red",
                lw=1.5, label="Pareto front")
        for r in front_rows:
            ax.annotate(f"{r['index']} {r['reduce']} d={r['dim']}", (r[cost], r["ndcg@10"]), fontsize=6,
                        xytext=(3, -8), textcoords="offset points")
    if b:
        ax.axhline(b["ndcg@10"], color="black", ls="--", label="BM25")
    ax.set_xscale("log")
    ax.set_xlabel("code bytes per vector (fixed tables left out)" if cost == "code_bytes"
                  else "bytes per vector (index bytes / vectors)")
    ax.set_ylabel("nDCG@10")
    ax.grid(alpha=0.3, which="both")
    _legend(ax)
    yield fig, name


def plot_recall_vs_qps(plt, rows, dense, kinds, b, name):
    """ANN recall@10 against batch QPS, one colour per approximate kind."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for kind in [k for k in kinds if k != "flat"]:
        sel = [r for r in dense if r["index"] == kind]
        ax.scatter([r["batch_qps"] for r in sel], [r["ann_recall@10"] for r in sel], s=22, label=kind)
        for r in sel:
            ax.annotate(str(r["dim"]), (r["batch_qps"], r["ann_recall@10"]), fontsize=6, alpha=0.7)
    ax.set_xscale("log")
    ax.set_xlabel("batch queries per second")
    ax.set_ylabel("ANN recall@10 (overlap with flat top-10)")
    ax.grid(alpha=0.3, which="both")
    if not any(k != "flat" for k in kinds):
        ax.text(0.5, 0.5, "no approximate index kinds in this grid", ha="center", transform=ax.transAxes)
    _legend(ax)
    yield fig, name


def _legend(ax, loc="best"):
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc=loc)


def _dim_axis(ax, rows):
    """Log-2 x axis labelled with the d values of the grid."""
    dims = sorted({r["dim"] for r in rows if r["dim"] != ""})
    ax.set_xscale("log", base=2)
    from matplotlib.ticker import NullLocator

    ax.set_xticks(dims, [str(d) for d in dims])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("embedding dimension d")


def _encoder_with_most_kinds(dense) -> tuple[str, str]:
    """(encoder, reducer) that ran the most index kinds; the first such in the grid."""
    counts: dict[tuple[str, str], set] = {}
    for r in dense:
        counts.setdefault((r["encoder"], r["reduce"]), set()).add(r["index"])
    return max(counts, key=lambda k: len(counts[k])) if counts else ("", "")


# ---------------------------------------------------------------- files

def write_csv(rows, path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({c: _csv_value(r.get(c, "")) for c in COLUMNS})


def _csv_value(v):
    return f"{v:.6g}" if isinstance(v, float) else v


def write_report(result: dict, out_dir: Path) -> dict[str, Path]:
    """Write results.csv, results.json, the plots, main_table.md and report.md; return their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = result["rows"]
    write_csv(rows, out_dir / "results.csv")
    (out_dir / "results.json").write_text(json.dumps(result, indent=1, default=str))
    plots = write_plots(rows, out_dir)
    table = main_table(rows, result["settings"]["dataset"])
    (out_dir / "main_table.md").write_text(table)
    (out_dir / "report.md").write_text(report_markdown(result, table))
    paths = {name: out_dir / name for name in ("results.csv", "results.json", "main_table.md", "report.md")}
    paths.update({p: out_dir / p for p in plots})
    return paths


def frontier_markdown(rows) -> list[str]:
    """The goal table (best configuration per byte budget against PCA's best) and the paired differences."""
    from rag.frontier import goal_rows, paired_rows

    goals, paired = goal_rows(rows), paired_rows(rows)
    out = []
    if goals:
        out += ["", "## Fewer bytes: the best configuration per budget against PCA's best (dense, nDCG@10)", "",
                markdown_table(goals, ["configuration", "pca_best", "pca_config", "best", "best_config", "share",
                                       "goal", "met"])]
    if paired:
        out += ["", "## Against PCA at the same d and index kind (per-query paired difference, 95% bootstrap)", "",
                markdown_table(paired, ["index", "reduce", "dim", "ndcg@10", "vs_pca_ndcg@10", "95% interval",
                                        "beyond noise"])]
    return out


def report_markdown(result: dict, table: str) -> str:
    s, rows = result["settings"], result["rows"]
    data = result.get("data", {})
    lines = [f"# Retrieval against embedding dimension: {s['dataset']}", ""]
    lines.append(f"{data.get('queries', '?')} queries with qrels over {data.get('passages', '?')} passages; "
                 f"device {result.get('machine', {}).get('device', '?')}; run took {result.get('elapsed_s', 0):.0f} s.")
    lines.append(f"Grid: encoders {', '.join(s['encoders'])}; d {', '.join(map(str, s['dims']))}; reducers "
                 f"{', '.join(s['reducers'])}; index kinds {', '.join(s['index_kinds'])}; retrievers "
                 f"{', '.join(s['retrievers'])}.")
    for note in result.get("notes", []):
        lines.append(f"- {note}")
    lines += ["", "## Main table", "", table, "## What the numbers say", ""]
    lines += [f"- {x}" for x in keep_sentences(rows) + divergence_sentences(rows)]
    if any("all_gold@10" in r for r in rows) and data.get("multi_gold_queries", 0) * 2 > data.get("queries", 0):
        lines += ["", f"## All gold paragraphs in the top 10 ({data['multi_gold_queries']} of {data['queries']} "
                  "queries judge more than one paragraph)", ""]
        sel = [r for r in rows if r["index"] in ("flat", "bm25s")]
        lines.append(markdown_table(sel, ["encoder", "reduce", "dim", "retriever", "recall@10", "all_gold@10"]))
    lines += frontier_markdown(rows)
    lines += ["", "## Plots", ""]
    for name, caption in PLOTS.items():
        lines += [f"![{caption}]({name})", "", f"*{caption}*", ""]
    lines += ["## Every row", "", markdown_table(rows, [c for c in COLUMNS if c not in ("dataset",)]), ""]
    return "\n".join(lines)
