"""`rag search "question"`: the top-k passages for a question, with title, source, score and snippet."""

from __future__ import annotations

import typer

from rag.commands.common import console, handle_errors, print_json, progress_bar, warn
from rag.commands.options import CorpusOpt, DimOpt, EncoderOpt, IndexOpt, ReduceOpt, RetrieverOpt



def search(question: str = typer.Argument(..., help="The question (at most 8,000 characters)."),
           corpus: CorpusOpt = "builtin",
           encoder: EncoderOpt = "minilm",
           dim: DimOpt = None,
           index: IndexOpt = "flat",
           reduce: ReduceOpt = "pca",
           retriever: RetrieverOpt = "hybrid",
           k: int = typer.Option(5, "-k", help="How many passages."),
           as_json: bool = typer.Option(False, "--json", help="Print {question, passages:[{id,title,source,score,text}]}.")):
    """Retrieve the top-k passages for a question. Builds the index first if it is missing."""
    _search(question, corpus, encoder, dim, index, reduce, retriever, k, as_json)


@handle_errors
def _search(question, corpus, encoder, dim, index, reduce, retriever, k, as_json):
    from rag.config import RagError, check_question
    from rag.retrieve import Retriever

    question, warning = check_question(question)
    if warning:
        warn(warning)
    if k < 1:
        raise RagError("-k must be at least 1")
    with progress_bar(f"building the {index} index (first use): encoding", enabled=not as_json) as progress:
        r = Retriever.open(corpus, encoder, dim, index, reduce, mode=retriever, progress=progress)
    hits = r.search(question, k)
    if as_json:
        return print_json({"question": question, "passages": [h.as_dict() for h in hits], **r.description,
                           "timings_ms": r.timings})
    d = r.description
    console.print(f"[dim]{d['retriever']} retrieval over {d['corpus']} · {d['encoder'] or ''} d={d['dim'] or '-'} "
                  f"{d['index'] or ''} · {r.timings['total_ms']:.1f} ms[/]")
    for n, h in enumerate(hits, 1):
        snippet = h.passage.text[:300] + ("…" if len(h.passage.text) > 300 else "")
        console.print(f"\n[bold]{n}. {h.passage.title}[/]  [dim]{h.passage.source} · score {h.score:.3f}[/]\n{snippet}",
                      highlight=False)
