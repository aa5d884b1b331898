"""The retrieval study's plots (matplotlib, Agg): quality, latency and bytes against d; quality against bytes with the
Pareto front; ANN recall against QPS. Each function draws one file from the result rows."""

from __future__ import annotations

from pathlib import Path

from rag.index.kinds import EXACT_KIND
from rag.studies.rows import bm25_row, curves, pareto_front

PLOTS = {
    "ndcg_vs_dim.png": "nDCG@10 against d (dense, flat index); BM25 and hybrid as reference lines",
    "latency_vs_dim.png": "single-query search latency p50 against d, per index kind",
    "bytes_vs_dim.png": "index size on disk against d, per index kind (log scale)",
    "quality_vs_bytes.png": "nDCG@10 against code bytes per vector (fixed tables left out), Pareto front marked "
    "and labelled",
    "ann_recall_vs_qps.png": "ANN recall@10 against batch QPS, approximate kinds",
}


def write_plots(rows, out_dir: Path) -> list[str]:
    """Draw the five PNGs into out_dir; return their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dense = [r for r in rows if r["retriever"] == "dense" and r["dim"] != ""]
    kinds = sorted({r["index"] for r in dense})
    b = bm25_row(rows)
    for draw, name in (
        (plot_ndcg_vs_dim, "ndcg_vs_dim.png"),
        (plot_cost_vs_dim, ""),
        (plot_quality_vs_bytes, "quality_vs_bytes.png"),
        (plot_recall_vs_qps, "ann_recall_vs_qps.png"),
    ):
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
        ax.plot(
            [r["dim"] for r in curve],
            [r["ndcg@10"] for r in curve],
            marker="o",
            ms=4,
            color=colour[enc],
            ls=styles.get(red, "-"),
            label=f"{enc} {red}",
        )
    shown = set()
    for (enc, red), curve in curves(rows, retriever="hybrid").items():
        if enc in shown:
            continue
        shown.add(enc)
        ax.plot(
            [r["dim"] for r in curve],
            [r["ndcg@10"] for r in curve],
            ls=":",
            marker="x",
            ms=4,
            alpha=0.6,
            color=colour.get(enc, "grey"),
            label=f"hybrid: {enc} {red} + BM25",
        )
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
    for name, col, ylabel, logy in (
        ("latency_vs_dim.png", "search_ms_p50", "search p50 (ms / query)", True),
        ("bytes_vs_dim.png", "index_bytes", "index bytes on disk", True),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for kind in kinds:
            sel = sorted(
                (r for r in dense if r["index"] == kind and r["encoder"] == enc and r["reduce"] == red),
                key=lambda r: r["dim"],
            )
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
        ax.step(
            [r[cost] for r in front_rows],
            [r["ndcg@10"] for r in front_rows],
            where="post",
            color="red",
            lw=1.5,
            label="Pareto front",
        )
        for r in front_rows:
            ax.annotate(
                f"{r['index']} {r['reduce']} d={r['dim']}",
                (r[cost], r["ndcg@10"]),
                fontsize=6,
                xytext=(3, -8),
                textcoords="offset points",
            )
    if b:
        ax.axhline(b["ndcg@10"], color="black", ls="--", label="BM25")
    ax.set_xscale("log")
    ax.set_xlabel(
        "code bytes per vector (fixed tables left out)"
        if cost == "code_bytes"
        else "bytes per vector (index bytes / vectors)"
    )
    ax.set_ylabel("nDCG@10")
    ax.grid(alpha=0.3, which="both")
    _legend(ax)
    yield fig, name


def plot_recall_vs_qps(plt, rows, dense, kinds, b, name):
    """ANN recall@10 against batch QPS, one colour per approximate kind."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for kind in [k for k in kinds if k != EXACT_KIND]:
        sel = [r for r in dense if r["index"] == kind]
        ax.scatter([r["batch_qps"] for r in sel], [r["ann_recall@10"] for r in sel], s=22, label=kind)
        for r in sel:
            ax.annotate(str(r["dim"]), (r["batch_qps"], r["ann_recall@10"]), fontsize=6, alpha=0.7)
    ax.set_xscale("log")
    ax.set_xlabel("batch queries per second")
    ax.set_ylabel("ANN recall@10 (overlap with flat top-10)")
    ax.grid(alpha=0.3, which="both")
    if not any(k != EXACT_KIND for k in kinds):
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
