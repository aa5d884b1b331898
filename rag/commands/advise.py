"""`rag advise`: measure encoder × d × reducer × index kind on the user's corpus and recommend one for a budget."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from rag.commands.common import console, handle_errors, key_table, print_json, progress_bars, safe, warn
from rag.commands.options import CORPUS_HELP
from rag.studies.advise import AdviseSpec

ADVISE = AdviseSpec(corpus="")  # the defaults, shown and used by the options below


def _names(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in value.split(",") if v.strip())


@handle_errors
def advise(
    corpus: str = typer.Option(..., help=CORPUS_HELP),
    queries: Optional[Path] = typer.Option(None, help="judged queries (BEIR queries.jsonl); with --qrels: nDCG@10"),
    qrels: Optional[Path] = typer.Option(
        None, help="qrels for the queries (BEIR TSV); without any: a label-free proxy"
    ),
    max_bytes_per_vector: Optional[float] = typer.Option(
        None, help="budget: code bytes per vector (what each document adds; fixed tables left out)"
    ),
    max_index_mb: Optional[float] = typer.Option(None, help="budget: the whole index file, in MB (measured)"),
    min_quality: Optional[float] = typer.Option(
        None, help="pick the smallest configuration keeping this share (0..1) of the full-width quality"
    ),
    encoders: str = typer.Option(",".join(ADVISE.encoders), help="comma-separated encoders to try"),
    dims: str = typer.Option(
        ",".join(map(str, ADVISE.dims)), help="comma-separated d to try (the full width is always tried)"
    ),
    reduce: str = typer.Option(
        ",".join(ADVISE.reducers), help="reducers to try (binary codes use their ITQ-rotated form)"
    ),
    index: str = typer.Option(",".join(ADVISE.kinds), help="index kinds to try"),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Recommend encoder, d, reducer and index kind for this corpus under a memory budget, from measured runs."""
    from rag.config import RagError
    from rag.studies.advise import AdviseSpec, check_spec
    from rag.studies.advise import advise as run_advise

    try:
        dim_list = tuple(int(d) for d in _names(dims))
    except ValueError:
        raise RagError(f"--dims must be a comma-separated list of integers, got '{dims}'") from None
    spec = check_spec(
        AdviseSpec(
            corpus=corpus,
            encoders=_names(encoders),
            dims=dim_list,
            reducers=_names(reduce),
            kinds=_names(index),
            queries_file=str(queries) if queries else None,
            qrels_file=str(qrels) if qrels else None,
            max_bytes_per_vector=max_bytes_per_vector,
            max_index_mb=max_index_mb,
            min_quality=min_quality,
        )
    )
    with progress_bars(enabled=not as_json) as bars:
        advice = run_advise(spec, progress=(lambda what, n, t: bars("measuring", n, t)) if bars else None)
    if as_json:
        return print_json(advice.to_dict())
    _render(advice)


def _render(advice) -> None:
    label = "nDCG@10" if advice.measure == "ndcg@10" else "proxy"
    keys = ("", "encoder", "d", "reduce", "index", "B/vec", "index MB", label, "share", "fits")
    cells = [
        [
            "→" if r is advice.recommended else "",
            safe(r["encoder"]),
            str(r["dim"]),
            safe(r["reduce"]),
            safe(r["index"]),
            str(r["code_bytes"]),
            f"{r['index_mb']:.2f}",
            f"{r[advice.measure]:.3f}",
            f"{r['share']:.0%}" if r["share"] is not None else "",
            "yes" if r["fits"] else "no",
        ]
        for r in advice.rows[:12]
    ]
    columns = [(name, name not in ("index MB", "share")) for name in keys]
    console.print(key_table(columns, cells, title=f"measured on your corpus ({label}; best first)"))
    if len(advice.rows) > 12:
        console.print(f"({len(advice.rows) - 12} more configurations measured; --json shows all)")
    for note in advice.notes:
        warn(note) if "no configuration" in note or "did not beat" in note or "dropped" in note else console.print(
            f"note: {safe(note)}", highlight=False
        )
    if advice.spearman is not None:
        console.print(f"the proxy ranks these configurations with Spearman {advice.spearman:.2f} against nDCG@10")
    if advice.command:
        console.print(f"[green]recommended[/]: {safe(advice.command)}", highlight=False)
