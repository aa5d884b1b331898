"""`rag eval ...`: evaluations. `retrieval` (quality, latency and size against d) and `answers` (what the answers
say: SQuAD, HotpotQA, the built-in question sets); `rag eval agent` is in rag.commands.agent."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Optional

import typer

from rag.agent.settings import COMPONENTS, DEFAULT_AGENT, AgentSettings
from rag.commands.common import console, err_console, handle_errors, print_json, progress_bars, safe
from rag.commands.options import (
    BackendOpt,
    DimOpt,
    EncoderOpt,
    FusionOpt,
    IndexOpt,
    ReduceOpt,
    RetrieverOpt,
    choices_help,
)
from rag.config import RagError
from rag.index.kinds import INDEX_KINDS
from rag.retrieve import RETRIEVERS, RetrievalSettings
from rag.studies.grid_spec import (
    DEFAULT_ANN_REDUCERS,
    DEFAULT_DIMS,
    DEFAULT_ENCODERS,
    DEFAULT_REDUCERS,
    QUICK,
    GridSpec,
)

GRID = GridSpec()  # the grid's defaults, shown and used by the options below

INCOMPLETE = ".incomplete"  # marker left in --out while a run is in progress; a re-run may resume there


def _names(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _dims(value: str) -> tuple[int, ...]:
    from rag.config import RagError

    try:
        return tuple(int(v) for v in _names(value))
    except ValueError:
        raise RagError(f"--dims must be a comma-separated list of integers, got '{value}'") from None


def prepare_out_dir(out: Path, overwrite: bool) -> str | None:
    """Refuse a non-empty --out unless --overwrite or it holds an interrupted run; return a note or None."""
    from rag.config import RagError

    if out.exists() and not out.is_dir():
        raise RagError(f"--out {out} is a file; point it at a folder")
    existing = [p.name for p in out.iterdir()] if out.exists() else []
    note = None
    if existing:
        if existing == [INCOMPLETE]:
            note = f"resuming the interrupted run in {out}: embeddings come from the cache"
        elif not overwrite:
            raise RagError(
                f"--out {out} already holds {len(existing)} files (e.g. {sorted(existing)[0]}); "
                "pass --overwrite to replace them or choose an empty folder"
            )
        else:
            for p in out.iterdir():
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / INCOMPLETE).write_text("a rag eval retrieval run is writing here\n")
    return note


def retrieval(
    dataset: str = typer.Option("scifact", help="scifact, hotpotqa, or a BEIR-layout folder"),
    encoders: Optional[str] = typer.Option(
        None,
        help="comma-separated encoder names (minilm, smollm2-input, lm:<checkpoint dir>, ...) "
        f"(default: {','.join(DEFAULT_ENCODERS)}; with --quick: {','.join(QUICK['encoders'])})",
    ),
    dims: Optional[str] = typer.Option(
        None,
        help=f"comma-separated d; d wider than an encoder is skipped (default: {','.join(map(str, DEFAULT_DIMS))}; "
        f"with --quick: {','.join(map(str, QUICK['dims']))})",
    ),
    reduce: Optional[str] = typer.Option(
        None,
        help=f"reducers; the exact index runs with each (default: {','.join(DEFAULT_REDUCERS)}; "
        f"with --quick: {','.join(QUICK['reducers'])})",
    ),
    index: str = typer.Option(",".join(INDEX_KINDS), help="FAISS index kinds: " + choices_help(INDEX_KINDS)),
    retriever: str = typer.Option(",".join(RETRIEVERS), help="retrievers: " + choices_help(RETRIEVERS)),
    ann_reduce: str = typer.Option(
        ",".join(DEFAULT_ANN_REDUCERS), help="reducers that also run the approximate kinds ('all' = every one)"
    ),
    queries: Optional[Path] = typer.Option(None, help="another query set over the same corpus (BEIR queries.jsonl)"),
    qrels: Optional[Path] = typer.Option(None, help="qrels for --queries (BEIR TSV: query-id, corpus-id, score)"),
    quick: bool = typer.Option(False, help="small grid on a subset (CI): 40 queries, their documents + 200 others"),
    hybrid_weight: float = typer.Option(GRID.hybrid_weight, help="weight of the dense side in the fusion"),
    fusion: FusionOpt = GRID.fusion,
    timed_queries: int = typer.Option(GRID.timed_queries, help="single queries timed for the latency percentiles"),
    backend: BackendOpt = GRID.backend,
    out: Path = typer.Option(..., help="folder for results.csv, results.json, report.md and the plots"),
    overwrite: bool = typer.Option(False, help="replace the files in a non-empty --out"),
    as_json: bool = typer.Option(False, "--json", help="print every row, the notes and the files written as JSON"),
) -> None:
    """Retrieval quality, latency and index size against embedding dimension d."""
    _run(
        dataset,
        encoders,
        dims,
        reduce,
        index,
        retriever,
        ann_reduce,
        queries,
        qrels,
        quick,
        hybrid_weight,
        fusion,
        timed_queries,
        out,
        overwrite,
        as_json,
        backend,
    )


@handle_errors
def _run(
    dataset,
    encoders,
    dims,
    reduce,
    index,
    retriever,
    ann_reduce,
    queries,
    qrels,
    quick,
    hybrid_weight,
    fusion,
    timed_queries,
    out,
    overwrite,
    as_json=False,
    backend=None,
) -> None:
    from rag.studies.grid import run_retrieval_grid
    from rag.studies.grid_spec import GridSpec, check_spec
    from rag.studies.report import write_report

    enc_names = _names(encoders) if encoders is not None else QUICK["encoders"] if quick else DEFAULT_ENCODERS
    dim_list = _dims(dims) if dims is not None else QUICK["dims"] if quick else DEFAULT_DIMS
    reducers = _names(reduce) if reduce is not None else QUICK["reducers"] if quick else DEFAULT_REDUCERS
    spec = GridSpec(
        dataset=dataset,
        encoders=enc_names,
        dims=dim_list,
        reducers=reducers,
        index_kinds=_names(index),
        retrievers=_names(retriever),
        ann_reducers=() if ann_reduce.strip() == "all" else _names(ann_reduce),
        queries_file=str(queries) if queries else None,
        qrels_file=str(qrels) if qrels else None,
        quick=quick,
        hybrid_weight=hybrid_weight,
        fusion=fusion,
        timed_queries=timed_queries,
        backend=backend,
    )
    check_spec(spec)  # every name checked before anything heavy happens
    note = prepare_out_dir(out, overwrite)
    if note:
        (err_console if as_json else console).print(f"[yellow]{safe(note)}[/yellow]")
    with progress_bars() as bars:

        def progress(what: str, done: int, total: int) -> None:  # one bar for the grid, one per other stage
            bars("grid" if what.split(" ")[0] in spec.encoders or what == "done" else what, done, total)

        result = run_retrieval_grid(spec, progress=progress)
    paths = write_report(result, out)
    (out / INCOMPLETE).unlink(missing_ok=True)
    if as_json:
        print_json(
            {
                "out": str(out),
                "files": {name: str(p) for name, p in paths.items()},
                "rows": result["rows"],
                "notes": result["notes"],
                "elapsed_s": result["elapsed_s"],
            }
        )
    else:
        _print_summary(console, result, paths)


def _print_summary(console, result: dict, paths: dict) -> None:
    from rich.table import Table

    from rag.studies.report import keep_sentences
    from rag.studies.rows import is_exact

    rows = result["rows"]
    table = Table(title=f"{result['settings']['dataset']}: flat index, every retriever")
    for col in ("encoder", "reduce", "dim", "retriever", "ndcg@10", "recall@100", "search_ms_p50"):
        table.add_column(col)
    for r in rows:
        if is_exact(r):
            table.add_row(
                *(
                    f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c])
                    for c in ("encoder", "reduce", "dim", "retriever", "ndcg@10", "recall@100", "search_ms_p50")
                )
            )
    console.print(table)
    for s in keep_sentences(rows):
        console.print(safe(s.replace("**", "")), highlight=False)
    for note in result["notes"]:
        console.print(f"note: {safe(note)}", highlight=False)
    console.print(
        f"{len(rows)} rows in {result['elapsed_s']:.0f} s; wrote {paths['report.md'].parent}/ ({', '.join(paths)})"
    )


DEFAULTS = RetrievalSettings()


def eval_answers(
    part: list[str] = typer.Option(
        None, help="squad-reading, squad-open, hotpotqa, builtin (repeat for several; default all)."
    ),
    llm: list[str] = typer.Option([DEFAULT_AGENT.llm], help="Backend(s) to evaluate; repeat for several."),
    compare_no_reader: bool = typer.Option(
        False, "--compare-no-reader", help="Also run the extractive backend without the reader (today's answers)."
    ),
    squad_limit: int = typer.Option(300, help="SQuAD questions (from the last 8 articles)."),
    hotpot_limit: int = typer.Option(None, help="HotpotQA held-out questions (default: all 200)."),
    seed: Path = typer.Option(
        None, help="Question set for the built-in corpus (default evalsets/seed_questions.jsonl)."
    ),
    encoder: EncoderOpt = DEFAULTS.encoder,
    dim: DimOpt = DEFAULTS.dim,
    index: IndexOpt = DEFAULTS.index,
    reduce: ReduceOpt = DEFAULTS.reduce,
    retriever: RetrieverOpt = DEFAULTS.retriever,
    max_steps: int = typer.Option(DEFAULT_AGENT.max_steps, "--max-steps", help="Most retrieval rounds."),
    hop_threshold: float = typer.Option(
        None, help="Multi-hop probability at which a planned second hop runs (default: the trained one)."
    ),
    threads: int = typer.Option(1, help="torch CPU threads."),
    docs: list[Path] = typer.Option(
        None, "--docs", help="A documentation folder to index and ask (repeat, each with its --questions)."
    ),
    questions: list[Path] = typer.Option(
        None, "--questions", help="The JSONL question set of each --docs folder (format: docs/own-documents.md)."
    ),
    abstain: bool = typer.Option(
        True, "--abstain/--no-abstain", help="The learned abstention (rag.answer.abstain) on, or off for an ablation."
    ),
    without: list[str] = typer.Option(
        None,
        "--without",
        help=f"An answer component to turn off for an ablation (repeat): {', '.join(COMPONENTS)}.",
    ),
    cli_sample: int = typer.Option(
        6, "--cli-sample", min=0, help="--docs: questions also timed as `rag search` and `rag ask` processes."
    ),
    out: Path = typer.Option(Path("results/answers"), "--out", help="Folder for results.json and report.md."),
):
    """Answer EM/F1 (SQuAD reading and open-domain, HotpotQA), key facts and citations (built-in corpus); with
    --docs DIR --questions FILE, the agent on a documentation folder: key fact, right file cited, abstention,
    screen warnings, markup in answers, and the CLI's ask/search latency ratio."""
    agent = AgentSettings(  # checked below
        max_steps=max_steps,
        hop_threshold=hop_threshold,
        use_abstain=abstain,
        without=tuple(without or ()),
    )
    if docs or questions:
        _eval_docs(
            docs or [], questions or [], (encoder, dim, index, reduce, retriever), agent, threads, cli_sample, out
        )
        return
    _eval_answers(
        part,
        llm,
        compare_no_reader,
        squad_limit,
        hotpot_limit,
        seed,
        (encoder, dim, index, reduce, retriever),
        agent,
        threads,
        out,
    )


@handle_errors
def _eval_docs(docs, questions, options, agent, threads, cli_sample, out):
    from rag.studies.docs_eval import COLUMNS, evaluate_docs, write_outputs

    agent = agent.validated()
    if len(docs) != len(questions):
        raise RagError(f"{len(docs)} --docs folder(s) but {len(questions)} --questions file(s); give one of each")
    if threads:
        import torch

        torch.set_num_threads(threads)
    encoder, dim, index, reduce, retriever = options
    settings = RetrievalSettings(encoder=encoder, dim=dim, index=index, reduce=reduce, retriever=retriever)
    with progress_bars() as progress:
        result, rows = evaluate_docs(
            list(zip(docs, questions)), settings=settings, agent=agent, cli_sample=cli_sample, progress=progress
        )
    write_outputs(out, result, rows)
    from rich.table import Table

    table = Table(title="documentation folders")
    for c in ("folder", "n", *COLUMNS, "ask/search"):
        table.add_column(c, justify="right")
    for name, f in result["folders"].items():
        m, cli = f["summary"], f["cli"]
        cells = ["-" if m[c] is None else f"{m[c]:g}" for c in COLUMNS]
        table.add_row(name, str(m["n"]), *cells, f"{cli['ask_over_search']:g}" if cli else "-")
    console.print(table)
    console.print(f"[dim]wrote {out}/results.json, per_query.jsonl, report.md[/]")


@handle_errors
def _eval_answers(parts, llm, compare, squad_limit, hotpot_limit, seed, options, agent, threads, out):
    from rich.table import Table

    from rag.studies.answer_eval import COLUMNS, PARTS, evaluate_answers

    if threads:
        import torch

        torch.set_num_threads(threads)
    encoder, dim, index, reduce, retriever = options
    settings = RetrievalSettings(encoder=encoder, dim=dim, index=index, reduce=reduce, retriever=retriever)
    agent = agent.validated()
    with progress_bars() as progress:
        result = evaluate_answers(
            tuple(parts or PARTS),
            llms=tuple(llm),
            settings=settings,
            agent=agent,
            squad_limit=squad_limit,
            hotpot_limit=hotpot_limit,
            seed_file=seed,
            compare_no_reader=compare,
            out=out,
            progress=progress,
        )
    for name, systems in result["parts"].items():
        cols = COLUMNS[name]
        table = Table(title=name)
        table.add_column("system", no_wrap=True)
        table.add_column("n", justify="right")
        for c in cols:
            table.add_column(c, justify="right")
        for s in systems:
            table.add_row(s["system"], str(s["n"]), *("-" if s.get(c) is None else f"{s[c]:g}" for c in cols))
        console.print(table)
    console.print(f"[dim]wrote {out}/results.json, per_query.jsonl, report.md[/]")
