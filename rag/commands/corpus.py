"""`rag corpus list|show`: which corpora exist here, and what their passages look like."""

from __future__ import annotations

import typer

from rag.commands.common import console, handle_errors, print_json, safe, safe_name, warn

app = typer.Typer(help="List corpora and look at their passages.", no_args_is_help=True)


@app.command("list")
@handle_errors
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Machine-readable output.")):
    """Each named corpus with its source, document count and whether it is available."""
    from rich.table import Table

    from rag.data.corpus import list_corpora

    rows = list_corpora()
    if as_json:
        return print_json(rows)
    table = Table("name", "documents", "available", "source", "description")
    for r in rows:
        table.add_row(
            r["name"],
            str(r["documents"] or "-"),
            "yes" if r["available"] else "[red]no[/]",
            r["source"],
            r["description"],
        )
    console.print(table)
    from rag.data.ingest import FORMATS

    console.print(
        f"Any folder of documents ({', '.join(sorted(FORMATS))}), or a BEIR folder (corpus.jsonl, queries.jsonl, "
        "qrels/), also works: --corpus PATH",
        highlight=False,
    )


@app.command("show")
@handle_errors
def show_cmd(
    name: str = typer.Argument(..., help="builtin, scifact, hotpotqa, squad, or a folder path."),
    n: int = typer.Option(3, "-n", help="How many passages to print."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Print the first few passages of a corpus, with counts."""
    from rag.data.corpus import folder_warnings, load_corpus

    corpus = load_corpus(name)
    info = {
        "name": corpus.name,
        "passages": len(corpus.passages),
        "queries": len(corpus.queries),
        "judged_queries": len(corpus.qrels),
        "content_hash": corpus.content_hash,
        "invalid_utf8": corpus.invalid_utf8,
        "sample": [vars(p) for p in corpus.passages[:n]],
    }
    if as_json:
        return print_json(info)
    for line in folder_warnings(corpus):  # files not read, unsupported extensions, bad bytes: one line each
        warn(line)
    console.print(
        f"[bold]{safe(corpus.name)}[/]: {info['passages']} passages, {info['queries']} queries, "
        f"{info['judged_queries']} judged; content hash {corpus.content_hash[:12]}",
        highlight=False,
    )
    for p in corpus.passages[:n]:
        console.print(
            f"\n[bold cyan]{safe_name(p.id)}[/] [bold]{safe_name(p.title)}[/]\n{safe(p.text[:400])}", highlight=False
        )


@app.command("synth")
@handle_errors
def synth_cmd(
    n: int = typer.Option(..., "--n", help="How many passages to write."),
    out: str = typer.Option(..., "--out", help="The folder to write corpus.jsonl into (a BEIR folder)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the sentence sampler."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
):
    """Write a synthetic corpus of N passages for scale tests: wiki-lm sentences recombined (rag.data.synth_corpus).
    Build it in bounded memory with: rag index build --corpus OUT --stream"""
    from pathlib import Path

    from rag.commands.common import progress_bar
    from rag.data.synth_corpus import write_synthetic_corpus

    with progress_bar("writing passages", enabled=not as_json) as progress:
        info = write_synthetic_corpus(Path(out), n, seed=seed, progress=progress)
    if as_json:
        return print_json(info)
    console.print(
        f"[green]wrote[/] {safe(info['path'])}: {info['passages']:,} passages ({info['bytes'] / 1e6:,.1f} MB) "
        f"from {info['sentences']:,} sentences of {info['articles']:,} articles",
        highlight=False,
    )
