"""The bytes-against-quality frontier of a retrieval study: the best configuration under a byte budget, the
goal table (GOALS: a target nDCG@10 per selector), and the paired differences against PCA. Plain functions over result rows (dicts with
rag.studies.report's columns); rag.studies.report and rag.studies.advise render them.
"""

from __future__ import annotations

from rag.index.kinds import EXACT_KIND, INDEX_TABLE

GOALS = [  # (label, selector over dense rows given the encoder's full width, goal nDCG@10 on SciFact)
    ("d=64, best reducer (flat)", lambda r, width: r["dim"] == 64 and r["index"] == EXACT_KIND, 0.58),
    ("d=32, best reducer (flat)", lambda r, width: r["dim"] == 32 and r["index"] == EXACT_KIND, 0.52),
    ("≤ 32 code bytes per vector, any kind", lambda r, width: r["code_bytes"] <= 32, 0.60),
    ("≤ 16 code bytes per vector, any kind", lambda r, width: r["code_bytes"] <= 16, 0.55),
    ("binary at full width (d/8 bytes)", lambda r, width: INDEX_TABLE[r["index"]].binary and r["dim"] == width, 0.635),
]


def dense_rows(rows) -> list[dict]:
    return [r for r in rows if r["retriever"] == "dense" and r["dim"] != "" and r.get("code_bytes", "") != ""]


def best_under(rows, max_code_bytes: float | None = None, max_index_bytes: float | None = None) -> dict | None:
    """The dense row with the highest nDCG@10 whose code bytes per vector (and/or index bytes) fit."""
    fits = [
        r
        for r in dense_rows(rows)
        if (max_code_bytes is None or r["code_bytes"] <= max_code_bytes)
        and (max_index_bytes is None or r["index_bytes"] <= max_index_bytes)
    ]
    return max(fits, key=lambda r: r["ndcg@10"], default=None)


def describe(r: dict) -> str:
    return f"{r['index']} {r['reduce']} d={r['dim']} ({r['code_bytes']} B)"


def goal_rows(rows, baseline_reducer: str = "pca") -> list[dict]:
    """One row per goal: the best configuration, PCA's best under the same selector, and the goal."""
    dense = dense_rows(rows)
    if not dense:
        return []
    width = max(r["dim"] for r in dense)
    out = []
    for label, select, goal in GOALS:
        sel = [r for r in dense if select(r, width)]
        if not sel:
            continue
        best = max(sel, key=lambda r: r["ndcg@10"])
        base = max((r for r in sel if r["reduce"] == baseline_reducer), key=lambda r: r["ndcg@10"], default=None)
        out.append(
            {
                "configuration": label,
                "pca_best": base["ndcg@10"] if base else "",
                "pca_config": describe(base) if base else "",
                "best": best["ndcg@10"],
                "best_config": describe(best),
                "share": best.get("ndcg@10_share", ""),
                "goal": goal,
                "met": "yes" if best["ndcg@10"] >= goal else f"no ({best['ndcg@10'] - goal:+.3f})",
            }
        )
    return out


def paired_rows(rows) -> list[dict]:
    """Every dense row with a paired difference against PCA, largest gain first."""
    sel = [r for r in dense_rows(rows) if r.get("vs_pca_ndcg@10", "") != ""]
    out = []
    for r in sorted(sel, key=lambda r: -r["vs_pca_ndcg@10"]):
        beyond = "yes" if r["vs_pca_ci_low"] > 0 else "worse" if r["vs_pca_ci_high"] < 0 else "no (noise)"
        out.append(
            {
                "index": r["index"],
                "reduce": r["reduce"],
                "dim": r["dim"],
                "ndcg@10": r["ndcg@10"],
                "vs_pca_ndcg@10": r["vs_pca_ndcg@10"],
                "95% interval": f"[{r['vs_pca_ci_low']:+.3f}, {r['vs_pca_ci_high']:+.3f}]",
                "beyond noise": beyond,
            }
        )
    return out
