"""`rag prepare`: make every model file a question can need now, so that no question waits for an export."""

from __future__ import annotations

import typer

from rag.commands.common import console, err_console, handle_errors, print_json, safe, warn


@handle_errors
def prepare(as_json: bool = typer.Option(False, "--json", help="Print what was made, and how long it took, as JSON.")):
    """Export the query path's ONNX models into RAG_CACHE_DIR once (MiniLM's int8 query encoder, the span reader,
    the injection classifier, the screen verifier): one line per model, library output kept off the terminal; then
    checks each built index's probe set against the query backend. `rag index build` does the same for the index it
    built; without either, the first question that needs a model makes it."""
    result = run_prepare(quiet=as_json)
    if as_json:
        return print_json(result)
    report_prepared(result, always=True)
    if result["failed"]:
        raise typer.Exit(1)


def run_prepare(quiet: bool = False, indexes: list[dict] | None = None) -> dict:
    """rag.agent.prepare.prepare_query_models, saying one line on stderr per model it makes (none when quiet)."""
    from rag.agent.prepare import prepare_query_models

    said = (
        (lambda line: None) if quiet else (lambda line: err_console.print(safe(line), highlight=False, soft_wrap=True))
    )
    return prepare_query_models(said, indexes=indexes)


def report_prepared(result: dict, always: bool = False) -> None:
    """A warning per model that failed; "query models ready" when one was made (or always)."""
    from rag.config import cache_dir

    for f in result["failed"]:
        warn(f"preparing {f['model']} failed ({f['why']}); run rag prepare again, or the first question makes it")
    made = len(result["made"])
    if made or (always and not result["failed"]):
        what = f"made {made} in {result['seconds']:.0f} s" if made else "nothing to make"
        if result["probes_checked"]:
            what += f"; the probe set of {result['probes_checked']} index(es) checked against the query backend"
        console.print(f"query models ready in {safe(cache_dir() / 'onnx')} ({what})", highlight=False, soft_wrap=True)
