"""`rag bench search`: per-stage latency of the search path beside raw faiss, langchain and plain ST; each encoder
backend side by side; cold processes; corpus encode speed; and (with --quality) SciFact nDCG@10 per backend."""

from __future__ import annotations

import typer

from rag.commands.common import console, handle_errors, print_json, progress_bar, safe


def bench_search(
    corpus: str = typer.Option("scifact", help="Corpus whose judged queries are timed."),
    queries: int = typer.Option(300, help="How many single queries."),
    cold: bool = typer.Option(
        True, "--cold/--no-cold", help="Also time cold processes (rag search/ask vs a plain script)."
    ),
    repeats: int = typer.Option(5, help="Cold-start runs of each command (the median is reported)."),
    encode: bool = typer.Option(True, "--encode/--no-encode", help="Also time corpus encoding (docs/s) per backend."),
    encode_docs: int = typer.Option(512, help="Documents in the corpus-encode timing."),
    quality: bool = typer.Option(
        False,
        "--quality/--no-quality",
        help="Also measure nDCG@10 per backend on the corpus (minutes if its vectors are not cached; "
        "int8 documents only when already cached).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Time single queries stage by stage and per encoder backend, cold processes and corpus encoding; print ratios."""
    _bench_search(corpus, queries, cold, repeats, encode, encode_docs, quality, as_json)


@handle_errors
def _bench_search(corpus, queries, cold, repeats, encode, encode_docs, quality, as_json):
    from rag.bench import search as bench
    from rag.config import RagError

    if queries < 1 or repeats < 1 or encode_docs < 1:
        raise RagError("--queries, --repeats and --encode-docs must be at least 1")
    with progress_bar("timing queries", enabled=not as_json) as progress:
        result = bench.bench_search(corpus, queries, progress=progress)
    if encode:
        result["corpus_encode"] = bench.bench_corpus_encode(corpus, encode_docs)
    if quality:
        with progress_bar(f"encoding {corpus} (first time only)", enabled=not as_json) as progress:
            result["quality"] = bench.bench_quality(corpus, int8_documents=None, progress=progress)
    if cold:
        result["cold_start"] = bench.cold_start("What does the embedding dimension d control?", repeats)
    if as_json:
        return print_json(result)
    render(result)


def render(result: dict) -> None:
    from rich.table import Table

    console.print(
        f"{result['queries']} single queries on {safe(result['corpus'])} ({result['documents']} docs, "
        f"d={result['dim']}, k={result['k']}, {result['device']}, {result['threads']} threads; "
        f"our retriever's backend: {result['backend']})"
    )
    table = Table("stage", "p50 ms", "p95 ms")
    for name, s in result["stages"].items():
        table.add_row(name, f"{s['p50_ms']:.3f}", f"{s['p95_ms']:.3f}")
    console.print(table)
    for name, value in result["ratios"].items():
        console.print(f"{name}: [bold]{value:.3f}×[/]")
    if "corpus_encode" in result:
        e = result["corpus_encode"]
        table = Table(
            "corpus encode",
            "docs/s",
            "× plain sentence-transformers",
            title=f"{e['documents']} documents in {e['chunks']} interleaved chunks",
        )
        for name, rate in e["docs_per_s"].items():
            table.add_row(name, f"{rate:.1f}", f"{e['ratio_to_plain'][name]:.2f}")
        console.print(table)
    if "quality" in result:
        q = result["quality"]
        table = Table(
            "documents",
            "queries",
            "nDCG@10",
            "loss vs torch",
            "query cosine to torch",
            title=f"{safe(q['corpus'])}: {q['queries']} judged queries, {q['documents']} documents",
        )
        for r in q["rows"]:
            table.add_row(
                r["documents"],
                r["queries"],
                f"{r['ndcg@10']:.4f}",
                f"{r['ndcg_loss']:+.4f}",
                f"{r['query_cosine_to_torch']:.4f}",
            )
        console.print(table)
    if "cold_start" in result:
        table = Table("cold process", "median s", "× plain script")
        for name, v in result["cold_start"].items():
            table.add_row(
                name,
                f"{v['median_s']:.2f}" if v["median_s"] else "failed",
                f"{v['ratio_to_plain']:.2f}" if v["ratio_to_plain"] else "-",
            )
        console.print(table)
