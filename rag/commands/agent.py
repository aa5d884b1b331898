"""`rag ask "question"` (the agent, streaming its steps) and `rag eval agent` (agent vs single-shot retrieval)."""

from __future__ import annotations

from pathlib import Path

import typer

from rag.agent.settings import DEFAULT_AGENT, MAX_STEPS_LIMIT, AgentSettings
from rag.commands.common import console, err_console, handle_errors, print_json, progress_bars, safe, safe_name, warn
from rag.commands.options import (
    DEFAULTS,
    DimOpt,
    EncoderOpt,
    IndexOpt,
    KOpt,
    NoUpdateOpt,
    ReduceOpt,
    RetrieverOpt,
    retrieval_options,
)
from rag.config import clip_words
from rag.retrieve import RetrievalSettings

LLM_HELP = (
    "extractive (no model: the learned reader's span), openai (RAG_OPENAI_BASE_URL, RAG_OPENAI_MODEL) or local "
    "(experimental: SmolLM2-135M on the CPU, often wrong)."
)
STEPS_HELP = f"Most retrieval rounds (first search, rewrites, second hop); 1 to {MAX_STEPS_LIMIT}."


@retrieval_options
def ask(
    question: str = typer.Argument(..., help="The question (at most 8,000 characters)."),
    *,
    settings: RetrievalSettings,
    llm: str = typer.Option(DEFAULT_AGENT.llm, help=LLM_HELP),
    max_steps: int = typer.Option(DEFAULT_AGENT.max_steps, "--max-steps", help=STEPS_HELP),
    server: str = typer.Option(None, "--server", help="Send the question to a running `rag serve` at this URL."),
    as_json: bool = typer.Option(False, "--json", help="Print {answer, citations, steps, timings, warnings}."),
    no_update: NoUpdateOpt = False,
):
    """Answer a question with the agent: plan, retrieve, grade, rewrite or hop, answer with \\[n] citations."""
    _ask(question, settings, llm, max_steps, server, as_json, no_update)


@handle_errors
def _ask(question, settings, llm, max_steps, server, as_json, no_update=False):
    from rag.config import check_question

    question = check_question(question)
    agent = AgentSettings(llm=llm, max_steps=max_steps).validated()
    if server:
        from rag.serve.client import ask_remote

        result = ask_remote(server, question, settings, agent)  # the server validates it
        if not as_json:
            for step in result.get("steps", []):
                show_step(step)
    else:
        from rag.agent.prepare import load_answer_models

        load_answer_models()  # ONNX Runtime builds the answer step's sessions while LangGraph is imported
        from rag.agent import run_agent
        from rag.commands.search import explain_empty_filter
        from rag.retrieve import open_retriever

        on_step = None if as_json else show_step
        settings = settings.validated()
        retriever = open_retriever(settings, update=not no_update)  # a changed folder is updated first
        explain_empty_filter(retriever, [])
        result = run_agent(question, settings, agent, retriever=retriever, on_step=on_step)
    if as_json:
        return print_json(result)
    show_answer(result)


def _titles(hits: list[dict], n: int = 3) -> str:
    return "; ".join(f"{safe_name(h['title'][:60])} ({h['score']:.2f})" for h in hits[:n]) + (
        " …" if len(hits) > n else ""
    )


def show_step(step: dict) -> None:
    """One line (or two) per finished graph node, printed as it happens."""
    node = step.get("node")
    ms = f"[dim]{step['ms']:.0f} ms[/]" if "ms" in step else ""
    if node == "analyze":
        line = f"[bold cyan]analyze[/]  {step['mode']}"
        if step.get("sub_questions"):
            line += "  sub-questions: " + " | ".join(safe(q) for q in step["sub_questions"])
    elif node == "retrieve":
        line = (
            f"[bold cyan]retrieve[/] round {step['round']}: "
            + " | ".join(f"“{safe(clip_words(q, 80, '…'))}”" for q in step["queries"])
            + f"\n         {step['new']} new: {_titles(step['hits'])}"
        )
    elif node == "grade":
        kept = step["kept"]
        line = f"[bold cyan]grade[/]    kept {len(kept)}, dropped {step['dropped']} (by {step['judged_by']})"
        if kept:
            line += ": " + ", ".join(safe_name(k["id"]) for k in kept[:4]) + (" …" if len(kept) > 4 else "")
    elif node == "rewrite":
        line = f"[bold yellow]rewrite[/]  {safe(step['reason'])} → “{safe(step['query'])}”"
    elif node == "hop":
        line = f"[bold magenta]hop[/]      from {safe(', '.join(step['from'])) or 'nothing'} → " + " | ".join(
            f"“{safe(clip_words(q, 80, '…'))}”" for q in step["queries"]
        )
    elif node == "answer":
        line = answer_line(step)
    else:
        line = f"[bold]{safe(node)}[/]"
    err_console.print(f"{line}  {ms}", highlight=False)
    for w in step.get("warnings", []) + ([step["warning"]] if step.get("warning") else []):
        warn(w)


def answer_line(step: dict) -> str:
    """'by extractive, citing 1 passage'; with no passage to answer from, says that instead of 'by none'."""
    n = len(step.get("citations", []))
    if not n and step.get("backend") in (None, "none"):
        return "[bold green]answer[/]   no passage to answer from: nothing relevant was found"
    return f"[bold green]answer[/]   by {safe(step['backend'])}, citing {n} passage{'' if n == 1 else 's'}"


def show_answer(result: dict) -> None:
    from rich.panel import Panel

    spans = result.get("spans") or []
    console.print(Panel(mark_spans(result["answer"], spans), title="answer", expand=False), highlight=False)
    for c in result["citations"]:
        console.print(
            f"  \\[{c['n']}] {safe_name(c['title'])}  [dim]{safe_name(c['id'])} · score {c['score']:.3f}[/]",
            highlight=False,
        )
        for sp in spans:
            if sp["id"] == c["id"]:
                console.print(
                    f"      span: [bold yellow]{safe(sp['text'])}[/] [dim](characters {sp['start']}–{sp['end']})[/]"
                )
    t = result.get("timings", {})
    if "total_ms" in t:
        console.print(f"[dim]{t['total_ms']:.0f} ms in total[/]")


def mark_spans(text: str, spans: list[dict]) -> str:
    """The answer as rich markup with the reader's spans in bold yellow (everything else escaped)."""
    out, at = [], 0
    for sp in sorted(spans, key=lambda s: text.find(s["text"])):
        i = text.find(sp["text"], at)
        if i < 0 or not sp["text"]:
            continue
        out += [safe(text[at:i]), f"[bold yellow]{safe(sp['text'])}[/]"]
        at = i + len(sp["text"])
    return "".join(out + [safe(text[at:])])


def eval_agent(
    dataset: str = typer.Option("hotpotqa", help="hotpotqa or squad."),
    queries: Path = typer.Option(None, help="Queries JSONL ({_id, text, metadata:{answer}}) instead of the dataset's."),
    qrels: Path = typer.Option(None, help="Qrels TSV (query-id, corpus-id, score) to go with --queries."),
    limit: int = typer.Option(None, help="Evaluate only the first N queries."),
    llm: list[str] = typer.Option([DEFAULT_AGENT.llm], help="Backend(s) to evaluate; repeat for several. " + LLM_HELP),
    encoder: EncoderOpt = DEFAULTS.encoder,
    dim: DimOpt = DEFAULTS.dim,
    index: IndexOpt = DEFAULTS.index,
    reduce: ReduceOpt = DEFAULTS.reduce,
    retriever: RetrieverOpt = DEFAULTS.retriever,
    k: KOpt = 10,
    max_steps: int = typer.Option(DEFAULT_AGENT.max_steps, "--max-steps", help=STEPS_HELP),
    threads: int = typer.Option(None, help="torch CPU threads (1 avoids oversubscription on a busy machine)."),
    out: Path = typer.Option(..., "--out", help="Folder for results.csv, results.json and report.md."),
):
    """Agent vs single-shot top-10 retrieval: all_gold@10 (HotpotQA), answer EM/F1, steps, latency p50/p95."""
    _eval_agent(
        dataset,
        queries,
        qrels,
        limit,
        llm,
        (dataset, encoder, dim, index, reduce, retriever, k),
        max_steps,
        threads,
        out,
    )


@handle_errors
def _eval_agent(dataset, queries, qrels, limit, llm, options, max_steps, threads, out):
    from rag.retrieve import RetrievalSettings
    from rag.studies.agent_eval import evaluate_agent

    settings = RetrievalSettings(*options)
    with progress_bars() as progress:
        result = evaluate_agent(
            dataset,
            queries_file=queries,
            qrels_file=qrels,
            limit=limit,
            llms=list(llm),
            settings=settings,
            k=settings.k,
            agent=AgentSettings(max_steps=max_steps),
            out=out,
            progress=progress,
            threads=threads,
        )
    from rich.table import Table

    table = Table(title=f"{dataset}: agent vs single-shot ({result['n_queries']} queries)")
    cols = {
        "all_gold@10": "all_gold@10",
        "em": "EM",
        "f1": "F1",
        "steps_mean": "steps",
        "latency_ms_p50": "p50 ms",
        "latency_ms_p95": "p95 ms",
    }
    table.add_column("system", no_wrap=True)
    for header in cols.values():
        table.add_column(header, justify="right")
    for row in result["systems"]:
        cells = [
            "-" if row.get(c) is None else f"{row[c]:.0f}" if c.startswith("latency") else f"{row[c]:.3f}" for c in cols
        ]
        table.add_row(row["name"], *cells)
    console.print(table)
    for line in result.get("summary", []):
        console.print(line, highlight=False)
    console.print(f"[dim]wrote {out}/results.csv, results.json, report.md[/]")
