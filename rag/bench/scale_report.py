"""Plots of `rag bench scale` results and the on-paper arithmetic for 1e8 and 1e9 vectors.

The projection uses only what the run measured: bytes per vector (index bytes ÷ N at the largest N measured for
each kind and d) and the fitted growth of single-query search time in N. What it assumes is stated in its output:
RAM per machine and the fraction of it an index may use, the encoder's throughput per GPU, the network round trip.
"""

from __future__ import annotations

import math
from pathlib import Path

from rag.index.kinds import EXACT_KIND, INDEX_TABLE

# the summary's compressed kind: inverted lists + PQ codes, no float vectors kept
IVF_PQ_KIND = next(n for n, k in INDEX_TABLE.items() if k.ivf and k.pq and not k.keeps_floats)

LABELS = {
    "build_s": "build seconds",
    "index_bytes": "index bytes",
    "peak_rss_mb": "peak RSS (MB)",
    "p50_ms": "single-query p50 (ms)",
    "p95_ms": "single-query p95 (ms)",
    "batch_ms_per_query": "batch ms per query",
}


def plot_growth(results: dict, out: Path) -> list[Path]:
    """One log-log figure per metric: a panel per d, a line per kind, the fitted exponent in the legend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = results["cells"]
    fits = {(g["kind"], g["d"]): g for g in results.get("growth", [])}
    dims = sorted({c["d"] for c in cells})
    paths = []
    for metric, label in LABELS.items():
        fig, axes = plt.subplots(1, len(dims), figsize=(4.2 * len(dims), 3.6), squeeze=False)
        for ax, d in zip(axes[0], dims):
            for kind in sorted({c["kind"] for c in cells if c["d"] == d}):
                pts = sorted((c["n"], c[metric]) for c in cells if c["d"] == d and c["kind"] == kind)
                fit = fits.get((kind, d), {}).get(metric)
                name = kind + (f" (N^{fit['exponent']:.2f})" if fit else "")
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
            ax.set(xscale="log", yscale="log", title=f"d={d}", xlabel="N vectors", ylabel=label)
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = out / f"scale-{metric}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def per_vector_costs(results: dict) -> list[dict]:
    """For each (kind, d): bytes per vector and search time at the largest measured N, and the search exponent."""
    fits = {(g["kind"], g["d"]): g for g in results.get("growth", [])}
    rows = []
    for kind, d in sorted({(c["kind"], c["d"]) for c in results["cells"]}):
        top = max((c for c in results["cells"] if c["kind"] == kind and c["d"] == d), key=lambda c: c["n"])
        exp = fits.get((kind, d), {}).get("p50_ms", {}).get("exponent")
        rows.append(
            {
                "kind": kind,
                "d": d,
                "n": top["n"],
                "bytes_per_vector": top["bytes_per_vector"],
                "p50_ms": top["p50_ms"],
                "p50_exponent": exp,
                "recall_at_10": top["recall_at_10"],
            }
        )
    return rows


def project(
    results: dict,
    targets=(1e8, 1e9),
    ram_gb: float = 256.0,
    usable: float = 0.7,
    gpus: int = 8,
    gpu_docs_per_s: float = 5000.0,
    cpu_docs_per_s: float = 19.6,
    rtt_ms: float = 1.0,
) -> dict:
    """Bytes, shards, machines, encoding hours and fan-out latency for each target N, from the measured costs.

    Shards: one per machine, each holding at most usable·ram_gb of index. Latency: every shard searches its
    N/shards vectors in parallel; the per-shard time is the measured p50 at the largest N scaled by the fitted
    exponent (linear when no fit), plus one network round trip; merging shards·k candidates is negligible.
    """
    per_machine = usable * ram_gb * 1e9
    rows = []
    for target in targets:
        for c in per_vector_costs(results):
            total = c["bytes_per_vector"] * target
            shards = max(1, math.ceil(total / per_machine))
            # A noisy fit on a busy machine can say anything; no kind here grows faster than a scan, or shrinks.
            exponent = min(1.0, max(0.0, c["p50_exponent"])) if c["p50_exponent"] is not None else 1.0
            shard_ms = c["p50_ms"] * (target / shards / c["n"]) ** exponent
            rows.append(
                {
                    "target": target,
                    "kind": c["kind"],
                    "d": c["d"],
                    "bytes": total,
                    "bytes_per_vector": c["bytes_per_vector"],
                    "machines": shards,
                    "shard_vectors": target / shards,
                    "shard_p50_ms": shard_ms,
                    "fanout_p50_ms": shard_ms + (rtt_ms if shards > 1 else 0.0),
                    "search_exponent": exponent,
                    "measured_at_n": c["n"],
                    "recall_at_10": c["recall_at_10"],
                }
            )
    encoding = [
        {
            "target": t,
            "gpus": gpus,
            "gpu_hours": t / (gpus * gpu_docs_per_s) / 3600,
            "cpu_2core_days": t / cpu_docs_per_s / 86400,
        }
        for t in targets
    ]
    return {
        "assumptions": {
            "ram_gb": ram_gb,
            "usable_fraction": usable,
            "gpus": gpus,
            "gpu_docs_per_s": gpu_docs_per_s,
            "cpu_docs_per_s": cpu_docs_per_s,
            "rtt_ms": rtt_ms,
        },
        "rows": rows,
        "encoding": encoding,
    }


def fmt_bytes(b: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(b) < 1000:
            return f"{b:.1f} {unit}"
        b /= 1000
    return f"{b:.1f} EB"


def summary(results: dict) -> dict:
    """The figures the issue's goals ask for, read from one run's results (None where not measured)."""
    cells = {(c["n"], c["d"], c["kind"]): c for c in results["cells"]}
    n_max = max((c["n"] for c in results["cells"]), default=0)
    flat_bw = [r for r in results.get("flat_vs_bandwidth", []) if r["n"] == n_max]
    flat_384 = next((r for r in flat_bw if r["d"] == 384), flat_bw[-1] if flat_bw else None)
    pq, flat = cells.get((n_max, 128, IVF_PQ_KIND)), cells.get((n_max, 128, EXACT_KIND))
    return {
        "n_max": n_max,
        "flat_vs_bandwidth": flat_384,
        "ivf_pq_d128": None
        if not (pq and flat)
        else {
            "recall_at_10": pq["recall_at_10"],
            "qps": pq["batch_qps"],
            "flat_qps": flat["batch_qps"],
            "qps_ratio": pq["batch_qps"] / flat["batch_qps"],
            "single_speedup": flat["p50_ms"] / pq["p50_ms"],
        },
    }


def growth_table(results: dict) -> list[list[str]]:
    """Rows of kind, d, then the exponent of each metric (for a table)."""
    rows = []
    for g in results.get("growth", []):
        rows.append([g["kind"], str(g["d"])] + [f"{g[m]['exponent']:.2f}" if m in g else "-" for m in LABELS])
    return rows


def markdown(results: dict) -> str:
    """The run's tables as markdown (for docs/scale.md): cells, flat against bandwidth, exponents, projection."""
    bw = results["bandwidth"]
    lines = [
        f"Memory bandwidth, one thread: read {bw['read_gb_s']:.1f} GB/s, copy {bw['copy_gb_s']:.1f} GB/s. "
        f"Real pool: {results['pool_vectors']:,} MiniLM vectors; vectors per N: "
        + ", ".join(f"{int(n):,} {src}" for n, src in sorted(results.get("data", {}).items(), key=lambda x: int(x[0]))),
        "",
        "| N | d | kind | vectors | build s | bytes/vector | peak RSS MB | p50 ms | p95 ms | batch QPS | recall@10 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in sorted(results["cells"], key=lambda c: (c["n"], c["d"], c["kind"])):
        lines.append(
            f"| {c['n']:,} | {c['d']} | {c['kind']} | {c.get('source', '?')} | {c['build_s']:.2f} | {c['bytes_per_vector']:.1f} | "
            f"{c['peak_rss_mb']:.0f} | {c['p50_ms']:.3f} | {c['p95_ms']:.3f} | {c['batch_qps']:.0f} | "
            f"{c['recall_at_10']:.3f} |"
        )
    lines += [f"\nSkipped: N={s['n']:,} d={s['d']} {s['kind']} ({s['why']})" for s in results.get("skipped", [])]
    lines += [
        "",
        "| flat N | d | bytes scanned | bandwidth limit ms | p50 ms | p50 × limit | fastest ms | fastest × limit "
        "| numpy scan p50 ms | p50 × numpy scan |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['n']:,} | {r['d']} | {fmt_bytes(r['bytes_scanned'])} | {r['limit_ms']:.3f} | {r['p50_ms']:.3f} | "
        f"{r['ratio']:.2f} | "
        + ("- | - |" if r.get("min_ms") is None else f"{r['min_ms']:.3f} | {r['min_ratio']:.2f} |")
        + (" - | - |" if not r.get("stream_ratio") else f" {r['stream_p50_ms']:.3f} | {r['stream_ratio']:.2f} |")
        for r in results.get("flat_vs_bandwidth", [])
    ]
    lines += [
        "",
        "| kind | d | " + " | ".join(f"exponent: {v}" for v in LABELS.values()) + " |",
        "|---|---|" + "---|" * len(LABELS),
    ]
    lines += ["| " + " | ".join(row) + " |" for row in growth_table(results)]
    if "projection" in results:
        p = results["projection"]
        a = p["assumptions"]
        lines += [
            "",
            f"On paper (assumed: {a['ram_gb']:.0f} GB RAM per machine, {a['usable_fraction']:.0%} of it for the "
            f"index; {a['rtt_ms']} ms round trip per fan-out; search time scaled from the largest measured N by "
            "the fitted exponent, clamped to 0..1):",
        ]
        lines += [
            "",
            "| N | kind | d | B/vector | index | machines | per-shard p50 ms | fan-out p50 ms | exponent |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {r['target']:.0e} | {r['kind']} | {r['d']} | {r['bytes_per_vector']:.1f} | {fmt_bytes(r['bytes'])} "
            f"| {r['machines']} | {r['shard_p50_ms']:.1f} | {r['fanout_p50_ms']:.1f} | {r['search_exponent']:.2f} |"
            for r in p["rows"]
        ]
        lines += [
            f"\nEncoding {e['target']:.0e} passages: {e['gpu_hours']:.1f} h on {e['gpus']} GPUs at "
            f"{p['assumptions']['gpu_docs_per_s']:.0f}/s each (assumed); {e['cpu_2core_days']:.0f} days on one "
            f"2-core CPU at {p['assumptions']['cpu_docs_per_s']}/s (measured)"
            for e in p["encoding"]
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the ivf-pq sweep (rag.bench.pq_sweep)


def pq_grid(run: dict) -> tuple[list[str], list[list[str]]]:
    """One run of the sweep as a table: a row per (variant, nprobe), a column per rerank depth R holding
    'recall@10 / QPS (× flat)'. Header and rows, for the terminal and for markdown alike."""
    reranks = sorted({r["rerank"] for r in run["rows"]})
    header = ["variant", "RAM B/vec", "build s", "nprobe", "ceiling"] + [
        "no rerank" if r == 0 else f"rerank {r}" for r in reranks
    ]
    cells: dict[tuple, dict] = {}
    for r in run["rows"]:
        cells.setdefault((r["variant"], r["nprobe"]), {})[r["rerank"]] = r
    rows = []
    for (variant, nprobe), by_r in cells.items():
        first = next(iter(by_r.values()))
        rows.append(
            [
                variant,
                f"{first['ram_bytes_per_vector']:.1f}",
                f"{first['build_s']:.0f}",
                str(nprobe),
                f"{first['ceiling']:.3f}",
            ]
            + [
                f"{by_r[r]['recall_at_10']:.3f} / {by_r[r]['qps']:.0f} ({by_r[r]['qps_vs_flat']:.1f}×)"
                if r in by_r
                else "-"
                for r in reranks
            ]
        )
    return header, rows


def pq_best_line(run: dict) -> str:
    """The flat baseline and the fastest setting that reaches the recall goal."""
    flat, best = run["flat"], run.get("best")
    line = (
        f"N={run['n']:,} d={run['d']} ({run['source']}): flat {flat['qps']:.0f} QPS "
        f"({run['queries']} queries, {run['threads']} threads, best of {run['repeats']}); nlist {run['nlist']}, "
        f"coarse quantizer trained on {run['train_size']:,} vectors; cells are recall@10 / batch QPS (× flat); "
        f"a rerank reads {4 * run['d']} B/vector of floats from disk. "
    )
    if run.get("rerank_cost"):
        c = run["rerank_cost"]
        line += (
            f"Re-ranking {c['depth']} scattered candidates costs {c['warm_ms_per_query']:.2f} ms/query from the "
            f"page cache, {c['cold_ms_per_query']:.2f} ms/query after the file is dropped from it. "
        )
    if not best:
        return line + "No setting reaches recall@10 0.9."
    return line + (
        f"Fastest at recall@10 ≥ 0.9: {best['variant']}, nprobe {best['nprobe']}, "
        + (f"rerank {best['rerank']}" if best["rerank"] else "no rerank")
        + f": recall@10 {best['recall_at_10']:.3f}, {best['qps']:.0f} QPS = {best['qps_vs_flat']:.1f}× flat, "
        f"{best['ram_bytes_per_vector']:.1f} B/vector in RAM"
        + (f" + {best['disk_bytes_per_vector']} on disk." if best["disk_bytes_per_vector"] else ".")
    )


def pq_markdown(results: dict) -> str:
    """Every run of the sweep: its baseline line and its recall / QPS grid."""
    lines = []
    for run in results["runs"]:
        header, rows = pq_grid(run)
        lines += ["", pq_best_line(run), "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines).lstrip("\n") + "\n"
