"""The `rag` command line: parses options, calls the `rag` library, renders with rich. No logic of its own.

Heavy libraries (torch, faiss, transformers, langgraph) are imported inside the commands, so `rag --help` stays fast.
"""

from __future__ import annotations

import typer

from rag.config import runtime_environment

runtime_environment()  # before torch or faiss start their thread pools

from rag.commands import agent, bench, corpus, evaluate, index, lm, search, serve

app = typer.Typer(
    name="rag",
    help="Agentic RAG at any embedding dimension d: corpora, encoders, FAISS indexes, an agent, and the d studies.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

app.command("ask")(agent.ask)
app.command("search")(search.search)
app.command("serve")(serve.serve)
app.add_typer(corpus.app, name="corpus")
app.add_typer(index.app, name="index")
app.add_typer(lm.app, name="lm")

eval_app = typer.Typer(help="Evaluations: retrieval quality and cost against d, and the agent.", no_args_is_help=True)
eval_app.command("retrieval")(evaluate.retrieval)
eval_app.command("agent")(agent.eval_agent)
app.add_typer(eval_app, name="eval")

bench_app = typer.Typer(help="Benchmarks: commands that print figures and ratios measured side by side.", no_args_is_help=True)
bench_app.command("search")(bench.bench_search)
bench_app.command("serve")(serve.bench_serve)
app.add_typer(bench_app, name="bench")

if __name__ == "__main__":
    app()
