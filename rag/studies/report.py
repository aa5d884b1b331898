"""Write a retrieval evaluation to disk: results.csv, results.json, five PNG plots and report.md.

Rows are plain dicts with the CSV columns below (plus extras such as ``all_gold@10`` that go to JSON).
Every sentence in the report is generated from the numbers in the rows.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rag.studies.plots import PLOTS, write_plots
from rag.studies.rows import bm25_row, curves, is_exact

COLUMNS = [
    "dataset",
    "encoder",
    "reduce",
    "dim",
    "index",
    "retriever",
    "device",
    "ndcg@10",
    "recall@10",
    "recall@100",
    "mrr@10",
    "ann_recall@10",
    "encode_ms_p50",
    "encode_ms_p95",
    "search_ms_p50",
    "search_ms_p95",
    "batch_qps",
    "index_bytes",
    "bytes_per_vector",
    "build_s",
    # columns added later keep the order of those above, so older result files still read
    "code_bytes",
    "ndcg@10_share",
    "vs_pca_ndcg@10",
    "vs_pca_ci_low",
    "vs_pca_ci_high",
    # how queries were encoded (the same path as `rag search`)
    "backend",
]
KEEP_SHARE = 0.95  # "smallest d that keeps 95% of full-width nDCG@10"
DIVERGE_GAP = 0.01  # truncation and PCA "diverge" once nDCG@10 differs by more than this


# ---------------------------------------------------------------- selecting rows


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
            found.append(
                {
                    "encoder": enc,
                    "reduce": red,
                    "full_dim": ref["dim"],
                    "full_ndcg": ref["ndcg@10"],
                    "dim": keep["dim"] if keep else None,
                    "ndcg": keep["ndcg@10"] if keep else None,
                    "best_dim": best["dim"],
                    "best_ndcg": best["ndcg@10"],
                }
            )
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
        others += [
            f"{f['reduce']} never does (best {f['best_ndcg']:.3f} at d={f['best_dim']})"
            for f in found
            if f["dim"] is None
        ]
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
            out.append(
                f"**{enc}**: truncation and PCA stay within {gap:.2f} nDCG@10 of each other at every d "
                f"tested ({', '.join(map(str, common))})."
            )
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
    lines = [
        f"nDCG@10 on {dataset} (dense retrieval, flat index):",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
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
    from rag.studies.frontier import goal_rows, paired_rows

    goals, paired = goal_rows(rows), paired_rows(rows)
    out = []
    if goals:
        out += [
            "",
            "## Fewer bytes: the best configuration per budget against PCA's best (dense, nDCG@10)",
            "",
            markdown_table(
                goals, ["configuration", "pca_best", "pca_config", "best", "best_config", "share", "goal", "met"]
            ),
        ]
    if paired:
        out += [
            "",
            "## Against PCA at the same d and index kind (per-query paired difference, 95% bootstrap)",
            "",
            markdown_table(
                paired, ["index", "reduce", "dim", "ndcg@10", "vs_pca_ndcg@10", "95% interval", "beyond noise"]
            ),
        ]
    return out


def report_markdown(result: dict, table: str) -> str:
    s, rows = result["settings"], result["rows"]
    data = result.get("data", {})
    lines = [f"# Retrieval against embedding dimension: {s['dataset']}", ""]
    lines.append(
        f"{data.get('queries', '?')} queries with qrels over {data.get('passages', '?')} passages; "
        f"device {result.get('machine', {}).get('device', '?')}; run took {result.get('elapsed_s', 0):.0f} s."
    )
    lines.append(
        f"Grid: encoders {', '.join(s['encoders'])}; d {', '.join(map(str, s['dims']))}; reducers "
        f"{', '.join(s['reducers'])}; index kinds {', '.join(s['index_kinds'])}; retrievers "
        f"{', '.join(s['retrievers'])}."
    )
    for note in result.get("notes", []):
        lines.append(f"- {note}")
    lines += ["", "## Main table", "", table, "## What the numbers say", ""]
    lines += [f"- {x}" for x in keep_sentences(rows) + divergence_sentences(rows)]
    if any("all_gold@10" in r for r in rows) and data.get("multi_gold_queries", 0) * 2 > data.get("queries", 0):
        lines += [
            "",
            f"## All gold paragraphs in the top 10 ({data['multi_gold_queries']} of {data['queries']} "
            "queries judge more than one paragraph)",
            "",
        ]
        sel = [r for r in rows if is_exact(r)]
        lines.append(markdown_table(sel, ["encoder", "reduce", "dim", "retriever", "recall@10", "all_gold@10"]))
    lines += frontier_markdown(rows)
    lines += ["", "## Plots", ""]
    for name, caption in PLOTS.items():
        lines += [f"![{caption}]({name})", "", f"*{caption}*", ""]
    lines += ["## Every row", "", markdown_table(rows, [c for c in COLUMNS if c not in ("dataset",)]), ""]
    return "\n".join(lines)
