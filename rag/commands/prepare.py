"""`rag prepare`: make every model file a question can need now, so that no question waits for an export."""

from __future__ import annotations

import typer

from rag.commands.common import console, err_console, handle_errors, print_json, safe, warn


@handle_errors
def prepare(as_json: bool = typer.Option(False, "--json", help="Print what was made, and how long it took, as JSON.")):
    """Export the query path's ONNX models into RAG_CACHE_DIR once (MiniLM's int8 query encoder, the span reader,
    the injection classifier, the screen verifier): one line per model, library output kept off the terminal; then
    checks each built index's probe set against the query backend. `make demo` runs it after the build; without it
    the first question that needs a model makes it."""
    from rag.agent.prepare import prepare_query_models
    from rag.config import cache_dir

    said = (
        (lambda line: None)
        if as_json
        else (lambda line: err_console.print(safe(line), highlight=False, soft_wrap=True))
    )
    result = prepare_query_models(said)
    if as_json:
        return print_json(result)
    for f in result["failed"]:
        warn(f"preparing {f['model']} failed ({f['why']}); run rag prepare again, or the first question makes it")
    made = len(result["made"])
    if made or not result["failed"]:
        what = f"made {made} in {result['seconds']:.0f} s" if made else "nothing to make"
        if result["probes_checked"]:
            what += f"; the probe set of {result['probes_checked']} index(es) checked against the query backend"
        console.print(f"query models ready in {safe(cache_dir() / 'onnx')} ({what})", highlight=False, soft_wrap=True)
    if result["failed"]:
        raise typer.Exit(1)
