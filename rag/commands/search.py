"""`rag search "question"`: the top-k passages for a question, with title, source, score and snippet."""

from __future__ import annotations

import typer

from rag.commands.common import console, handle_errors, print_json, progress_bar, safe, safe_name, warn
from rag.commands.options import NoUpdateOpt, retrieval_options
from rag.retrieve import RetrievalSettings


@retrieval_options
def search(
    question: str = typer.Argument(..., help="The question (at most 8,000 characters)."),
    *,
    settings: RetrievalSettings,
    as_json: bool = typer.Option(False, "--json", help="Print {question, passages:[{id,title,source,score,text}]}."),
    no_update: NoUpdateOpt = False,
):
    """Retrieve the top-k passages for a question. Builds the index first if it is missing."""
    _search(question, settings, as_json, no_update)


@handle_errors
def _search(question, settings, as_json, no_update=False):
    from rag.config import check_question
    from rag.retrieve import open_retriever

    question = check_question(question)
    settings = settings.validated()
    with progress_bar(f"encoding passages for the {settings.index} index", enabled=not as_json) as progress:
        r = open_retriever(settings, progress=progress, update=not no_update)
    hits = r.search(question)
    explain_empty_filter(r, hits)
    if as_json:
        return print_json(r.result(question, hits))
    d = r.description
    console.print(
        f"[dim]{d['retriever']} retrieval over {safe(d['corpus'])} · {d['encoder'] or ''} d={d['dim'] or '-'} "
        f"{d['index'] or ''} · {r.timings['total_ms']:.1f} ms[/]"
    )
    for n, h in enumerate(hits, 1):
        snippet = h.passage.text[:300] + ("…" if len(h.passage.text) > 300 else "")
        console.print(
            f"\n[bold]{n}. {safe_name(h.passage.title)}[/]  [dim]{safe_name(h.passage.source)} · score {h.score:.3f}[/]"
            f"\n{safe(snippet)}",
            highlight=False,
        )


def explain_empty_filter(retriever, hits) -> None:
    """A `--where` that kept no passage says why on stderr, with the closest sources (rag.data.where_hint)."""
    if hits or not retriever.settings.where:
        return
    from rag.data.where_hint import where_hint

    sources = [p.source for p in retriever.passages]
    if hint := where_hint(retriever.settings.where, sources, retriever.corpus.name):
        warn(hint)
