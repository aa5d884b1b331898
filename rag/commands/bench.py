"""`rag bench search`: per-stage latency of the search path beside raw faiss, langchain and plain ST."""

from __future__ import annotations

import typer

from rag.commands.common import console, handle_errors, print_json, progress_bar


def bench_search(corpus: str = typer.Option("scifact", help="Corpus whose judged queries are timed."),
                 queries: int = typer.Option(300, help="How many single queries."),
                 cold: bool = typer.Option(True, "--cold/--no-cold", help="Also time cold processes (rag search/ask vs a plain script)."),
                 repeats: int = typer.Option(3, help="Cold-start runs of each command."),
                 as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Time 300 single queries stage by stage (encode, dense, BM25, fusion, total) and print the ratios."""
    _bench_search(corpus, queries, cold, repeats, as_json)


@handle_errors
def _bench_search(corpus, queries, cold, repeats, as_json):
    from rich.table import Table

    from rag.bench import bench_search as run, cold_start

    with progress_bar("timing queries", enabled=not as_json) as progress:
        result = run(corpus, queries, progress=progress)
    if cold:
        result["cold_start"] = cold_start("What does the embedding dimension d control?", repeats)
    if as_json:
        return print_json(result)
    console.print(f"{result['queries']} single queries on {result['corpus']} ({result['documents']} docs, d={result['dim']}, "
                  f"k={result['k']}, {result['device']}, {result['threads']} threads)")
    table = Table("stage", "p50 ms", "p95 ms")
    for name, s in result["stages"].items():
        table.add_row(name, f"{s['p50_ms']:.3f}", f"{s['p95_ms']:.3f}")
    console.print(table)
    for name, value in result["ratios"].items():
        console.print(f"{name}: [bold]{value:.3f}×[/]")
    if cold:
        table = Table("cold process", "median s", "× plain script")
        for name, v in result["cold_start"].items():
            table.add_row(name, f"{v['median_s']:.2f}" if v["median_s"] else "failed",
                          f"{v['ratio_to_plain']:.2f}" if v["ratio_to_plain"] else "-")
        console.print(table)
