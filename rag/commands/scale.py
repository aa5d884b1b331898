"""`rag bench scale` (cost growth in N, bandwidth, projections) and `rag shards ...` (Ray-sharded indexes)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rag.bench.scale import DEFAULT_DIMS, DEFAULT_KINDS, DEFAULT_NS
from rag.commands.common import console, handle_errors, print_json, safe
from rag.commands.options import DEFAULTS, choices_help
from rag.index.kinds import INDEX_KINDS
from rag.index.spec import DEFAULT_INDEX, IndexSpec
from rag.retrieve.build import BUILD_ENGINES, DEFAULT_BUILD


def parse_list(text: str, cast, what: str) -> list:
    try:
        values = [cast(float(v)) if cast is int else cast(v) for v in text.split(",") if v.strip()]
    except ValueError:
        from rag.config import RagError

        raise RagError(f"{what} must be a comma-separated list of numbers, got {text!r}") from None
    if not values:
        from rag.config import RagError

        raise RagError(f"{what} is empty")
    return values


def bench_scale(
    ns: str = typer.Option(",".join(map(str, DEFAULT_NS)), "--n", help="Vector counts N (1e6 works)."),
    dims: str = typer.Option(",".join(map(str, DEFAULT_DIMS)), "--dims", help="Dimensions d."),
    kinds: str = typer.Option(",".join(DEFAULT_KINDS), "--kinds", help="Index kinds: " + choices_help(INDEX_KINDS)),
    queries: int = typer.Option(100, help="Held-out queries per cell (recall and batch QPS)."),
    single: int = typer.Option(30, help="Single queries timed per cell (fewer if a cell is slow)."),
    hnsw_max: int = typer.Option(300_000, help="Skip hnsw above this N (its build is the slowest)."),
    out: Path = typer.Option(Path("results/scale"), help="Folder for results.json and plots."),
    resume: bool = typer.Option(False, "--resume", help="Keep the cells already in results.json."),
    isolate: bool = typer.Option(
        True, "--isolate/--in-process", help="Each cell in a fresh process (its own peak RSS), or all in this one."
    ),
    bandwidth_mb: int = typer.Option(512, help="Array size for the memory-bandwidth measurement."),
    ray_encode: int = typer.Option(
        0, help="Also time Ray Data encoding of this many SciFact passages against one process (needs the scale extra)."
    ),
    project: str = typer.Option("", "--project", help="Also print the arithmetic for these N, e.g. 1e8,1e9."),
    only_project: bool = typer.Option(False, "--only-project", help="Project from results.json; measure nothing."),
    ram_gb: float = typer.Option(256.0, help="RAM per machine (projection)."),
    gpus: int = typer.Option(8, help="GPUs that encode (projection)."),
    gpu_rate: float = typer.Option(5000.0, help="Assumed MiniLM passages/s per GPU (projection)."),
    rtt_ms: float = typer.Option(1.0, help="Assumed network round trip per fan-out (projection)."),
    markdown: Path = typer.Option(None, "--markdown", help="Also write the tables as markdown here."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    pq_sweep: bool = typer.Option(
        False,
        "--pq-sweep",
        help="Instead of the grid: ivf-pq recall@10 "
        "against QPS (code sizes, nprobe, rerank) beside flat in one process, "
        "on real and synthetic vectors where the real pool has enough.",
    ),
):
    """Measure build time, bytes, peak RSS, search latency, QPS and recall@10 against N, d and index kind."""
    _bench_scale(
        ns,
        dims,
        kinds,
        queries,
        single,
        hnsw_max,
        out,
        resume,
        isolate,
        bandwidth_mb,
        ray_encode,
        project,
        only_project,
        ram_gb,
        gpus,
        gpu_rate,
        rtt_ms,
        markdown,
        as_json,
        pq_sweep,
    )


@handle_errors
def _bench_scale(
    ns,
    dims,
    kinds,
    queries,
    single,
    hnsw_max,
    out,
    resume,
    isolate,
    bandwidth_mb,
    ray_encode,
    project,
    only_project,
    ram_gb,
    gpus,
    gpu_rate,
    rtt_ms,
    markdown,
    as_json,
    pq_sweep=False,
):
    from rag.bench.scale import load_results, run_scale, summarise
    from rag.bench.scale_report import plot_growth
    from rag.bench.scale_report import project as do_project
    from rag.config import RagError, valid_choice
    from rag.index.kinds import INDEX_KINDS

    ns, dims = parse_list(ns, int, "--n"), parse_list(dims, int, "--dims")
    kinds = parse_list(kinds, str, "--kinds")
    for kind in kinds:
        valid_choice(kind, INDEX_KINDS, "index kind")
    if min(ns) < 2 * queries or min(dims) < 1:
        raise RagError(f"every N must be at least twice --queries ({queries}) and every d at least 1")
    if pq_sweep:
        return run_pq_sweep_cmd(out, ns, dims, queries, markdown, as_json)
    if only_project:
        results = load_results(out / "results.json")
        if not results.get("cells"):
            raise RagError(f"no measured cells in {out / 'results.json'}; run: rag bench scale --out {out}")
        summarise(results)  # a killed run saved its cells but not the fits
    else:
        results = run_scale(
            out,
            ns,
            dims,
            kinds,
            queries,
            single,
            hnsw_max,
            isolate,
            resume,
            bandwidth_mb=bandwidth_mb,
            progress=None if as_json else lambda what: console.print(f"[dim]measuring {safe(what)}[/]"),
        )
        results["plots"] = [str(p) for p in plot_growth(results, out)]
    if ray_encode:
        from rag.bench.scale import ray_encode_throughput
        from rag.config import atomic_write_text

        results["ray_encode"] = ray_encode_throughput(ray_encode)
        atomic_write_text(out / "results.json", json.dumps(results, indent=1))
    if project:
        results["projection"] = do_project(
            results, parse_list(project, float, "--project"), ram_gb, gpus=gpus, gpu_docs_per_s=gpu_rate, rtt_ms=rtt_ms
        )
    if markdown:
        from rag.bench.scale_report import markdown as to_markdown
        from rag.config import atomic_write_text

        atomic_write_text(markdown, to_markdown(results))
    if as_json:
        return print_json(results)
    render_scale(results)


def run_pq_sweep_cmd(out: Path, ns, dims, queries: int, markdown: Path | None, as_json: bool) -> None:
    from rich.table import Table

    from rag.bench.pq_sweep import run_pq_sweep
    from rag.bench.scale_report import pq_best_line, pq_grid, pq_markdown
    from rag.config import atomic_write_text

    results = run_pq_sweep(
        out,
        ns,
        dims,
        queries,
        progress=None if as_json else lambda what: console.print(f"[dim]measuring {safe(what)}[/]"),
    )
    if markdown:
        atomic_write_text(markdown, pq_markdown(results))
    if as_json:
        return print_json(results)
    for run in results["runs"]:
        header, rows = pq_grid(run)
        table = Table(*header)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        console.print(safe(pq_best_line(run)))


def render_scale(results: dict) -> None:
    from rich.table import Table

    from rag.bench.scale_report import LABELS, fmt_bytes, growth_table, summary

    bw = results["bandwidth"]
    console.print(
        f"pool: {results['pool_vectors']:,} real MiniLM vectors; memory bandwidth (1 thread): "
        f"read {bw['read_gb_s']:.1f} GB/s, copy {bw['copy_gb_s']:.1f} GB/s"
    )
    table = Table(
        "N", "d", "kind", "source", "build s", "bytes", "peak RSS MB", "p50 ms", "p95 ms", "batch QPS", "recall@10"
    )
    for c in sorted(results["cells"], key=lambda c: (c["n"], c["d"], c["kind"])):
        table.add_row(
            f"{c['n']:,}",
            str(c["d"]),
            c["kind"],
            c.get("source", "?"),
            f"{c['build_s']:.2f}",
            fmt_bytes(c["index_bytes"]),
            f"{c['peak_rss_mb']:.0f}",
            f"{c['p50_ms']:.3f}",
            f"{c['p95_ms']:.3f}",
            f"{c['batch_qps']:.0f}",
            f"{c['recall_at_10']:.3f}",
        )
    console.print(table)
    for s in results.get("skipped", []):
        console.print(f"skipped N={s['n']:,} d={s['d']} {s['kind']}: {safe(s['why'])}")
    table = Table(
        "flat N",
        "d",
        "bytes scanned",
        "limit ms",
        "p50 ms",
        "p50 × limit",
        "fastest ms",
        "fastest × limit",
        "numpy scan p50 ms",
        "p50 × numpy scan",
    )
    for r in results.get("flat_vs_bandwidth", []):
        table.add_row(
            f"{r['n']:,}",
            str(r["d"]),
            fmt_bytes(r["bytes_scanned"]),
            f"{r['limit_ms']:.3f}",
            f"{r['p50_ms']:.3f}",
            f"{r['ratio']:.2f}",
            "-" if r.get("min_ms") is None else f"{r['min_ms']:.3f}",
            "-" if r.get("min_ratio") is None else f"{r['min_ratio']:.2f}",
            "-" if not r.get("stream_p50_ms") else f"{r['stream_p50_ms']:.3f}",
            "-" if not r.get("stream_ratio") else f"{r['stream_ratio']:.2f}",
        )
    console.print(table)
    if results.get("growth"):
        table = Table("kind", "d", *(f"exp {label}" for label in LABELS.values()))
        for row in growth_table(results):
            table.add_row(*row)
        console.print(table)
    s = summary(results)
    if s["ivf_pq_d128"]:
        g = s["ivf_pq_d128"]
        console.print(
            f"ivf-pq at N={s['n_max']:,} d=128: recall@10 {g['recall_at_10']:.3f}, batch QPS "
            f"{g['qps_ratio']:.1f}× flat, single query {g['single_speedup']:.1f}× faster"
        )
    if "ray_encode" in results:
        e = results["ray_encode"]
        console.print(
            f"encoding {e['texts']} passages: one process {e['single_docs_per_s']:.1f}/s, Ray Data with "
            f"{e['actors']} actors {e['ray_docs_per_s']:.1f}/s = [bold]{e['ratio']:.2f}×[/] "
            f"(max |Δ| {e['max_abs_diff']:.1e})"
        )
    for plot in results.get("plots", []):
        console.print(f"plot: {safe(plot)}")
    if "projection" in results:
        render_projection(results["projection"], fmt_bytes)


def render_projection(p: dict, fmt_bytes) -> None:
    from rich.table import Table

    a = p["assumptions"]
    console.print(
        f"[bold]projection[/] (assumed: {a['ram_gb']:.0f} GB RAM per machine, {a['usable_fraction']:.0%} "
        f"for the index; {a['gpus']} GPUs at {a['gpu_docs_per_s']:.0f} passages/s each; "
        f"{a['rtt_ms']} ms round trip)"
    )
    table = Table(
        "N", "kind", "d", "B/vector", "index", "machines", "per-shard p50 ms", "fan-out p50 ms", "exp", "from N"
    )
    for r in p["rows"]:
        table.add_row(
            f"{r['target']:.0e}",
            r["kind"],
            str(r["d"]),
            f"{r['bytes_per_vector']:.1f}",
            fmt_bytes(r["bytes"]),
            str(r["machines"]),
            f"{r['shard_p50_ms']:.1f}",
            f"{r['fanout_p50_ms']:.1f}",
            f"{r['search_exponent']:.2f}",
            f"{r['measured_at_n']:,}",
        )
    console.print(table)
    for e in p["encoding"]:
        console.print(
            f"encoding {e['target']:.0e} passages: {e['gpu_hours']:.1f} h on {e['gpus']} GPUs; "
            f"{e['cpu_2core_days']:.0f} days on one 2-core CPU at the measured {a['cpu_docs_per_s']}/s"
        )


# ---------------------------------------------------------------- sharded indexes (Ray)

EngineOpt = typer.Option(
    DEFAULT_BUILD.engine,
    "--engine",
    help="; ".join(f"{name}: {engine.description}" for name, engine in BUILD_ENGINES.items())
    + " (Ray is the scale extra: pip install -e '.\\[scale]').",
)
ShardsOpt = typer.Option(DEFAULT_BUILD.shards, "--shards", help="With --engine ray: how many shards.")
AddressOpt = typer.Option(
    None, "--address", help="With --engine ray: auto, host:port or ray://host:port (default: a new local Ray)."
)


def render_sharded(summary: dict) -> None:
    """`rag index build --engine ray`: the sharded build's line (rag.index.shards, run through rag.retrieve.build)."""
    rate = f", {summary['encode_docs_per_s']:.1f} docs/s" if "encode_docs_per_s" in summary else ""
    console.print(
        f"[green]built[/] {safe(summary['path'])}: {summary['shards']} shards "
        f"({', '.join(map(str, summary['shard_vectors']))} vectors), d={summary['dim']}, {summary['kind']}, "
        f"{summary['index_bytes']:,} bytes; vectors from {summary['encoded_by']}{rate}"
    )


shards_app = typer.Typer(
    help="Sharded indexes (built with rag index build --engine ray): search and inspect.", no_args_is_help=True
)


@shards_app.command("search")
@handle_errors
def shards_search(
    question: str = typer.Argument(..., help="The query."),
    corpus: str = typer.Option(DEFAULTS.corpus, help="The corpus the shards were built from."),
    encoder: str = typer.Option(DEFAULT_INDEX.encoder, help="Encoder the shards were built with."),
    dim: int = typer.Option(DEFAULT_INDEX.dim, help="d the shards were built at (default: full width)."),
    index: str = typer.Option(DEFAULT_INDEX.kind, "--index", help="Index kind of the shards."),
    reduce: str = typer.Option(DEFAULT_INDEX.reduce, help="Reducer of the shards."),
    shards: int = typer.Option(2, "--shards", help="How many shards the index was built with."),
    k: int = typer.Option(DEFAULTS.k, "-k", "--k", help="How many passages."),
    engine: str = typer.Option("local", "--engine", help="local: open every shard here; ray: one Ray actor per shard."),
    address: str = typer.Option(None, "--address", help="With --engine ray: the cluster."),
    allow_partial: bool = typer.Option(
        False, "--allow-partial", help="Answer from the shards that answer, and say which did not (default: an error)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Fan a query out to every shard and merge the top-k."""
    from rag.config import check_question
    from rag.data.corpus import load_corpus
    from rag.index.shards import ShardSet, sharded_path

    question = check_question(question)
    spec = IndexSpec(encoder, dim, index, reduce).validated()
    c = load_corpus(corpus)
    shard_set = ShardSet(sharded_path(c, spec, shards), engine, allow_partial, address)
    hits = shard_set.search(shard_set.encode([question]), k)
    rows = [
        {"rank": i + 1, "score": float(s), "row": int(r), "id": p.id, "title": p.title, "text": p.text}
        for i, (s, r, p) in enumerate(zip(hits.scores[0], hits.rows[0], hits.passages[0]))
    ]
    result = {
        "question": question,
        "hits": rows,
        "answered": hits.answered,
        "missing": hits.missing,
        "shards": shard_set.manifest["shards"],
        "engine": engine,
    }
    if as_json:
        return print_json(result)
    if hits.missing:
        console.print(f"[yellow]partial:[/] shards {hits.answered} answered; missing: {safe('; '.join(hits.missing))}")
    for r in rows:
        console.print(f"{r['rank']}. [bold]{safe(r['title'] or r['id'])}[/] ({r['score']:.3f}) {safe(r['text'][:160])}")
