"""The `rag` command line: parses options, calls the `rag` library, renders with rich. No logic of its own.

Heavy libraries (torch, faiss, transformers) are imported inside the commands, so `rag --help` stays fast.
"""

from __future__ import annotations

import typer

from rag.commands import corpus, index, search

app = typer.Typer(
    name="rag",
    help="Agentic RAG at any embedding dimension d: corpora, encoders, FAISS indexes, an agent, and the d studies.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(corpus.app, name="corpus")
app.add_typer(index.app, name="index")
app.command("search")(search.search)

bench_app = typer.Typer(help="Benchmarks: commands that print figures and ratios measured side by side.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
eval_app = typer.Typer(help="Evaluations: retrieval quality and cost against d, and the agent.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")

if __name__ == "__main__":
    app()
