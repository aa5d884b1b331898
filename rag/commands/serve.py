"""`rag serve` (the HTTP service) and `rag bench serve` (a concurrent load check against a real server)."""

from __future__ import annotations

import os
from pathlib import Path

import typer
from rich.table import Table

from rag.commands.common import console, err_console, safe
from rag.commands.options import DEFAULTS, choices_help
from rag.index.kinds import INDEX_KINDS
from rag.retrieve import RETRIEVERS


def serve(
    host: str = typer.Option("127.0.0.1", help="Address to bind; the default accepts local connections only."),
    port: int = typer.Option(8000, min=0, max=65535, help="TCP port (0 picks a free one)."),
    corpus: list[str] = typer.Option(
        [], "--corpus", help="Extra corpus folder, NAME=PATH or PATH (served as the folder's name); repeatable."
    ),
    encoder: list[str] = typer.Option(
        [], "--encoder", help="Extra encoder, NAME=lm:<checkpoint dir> or lm:<dir> (served as lm-<folder>); repeatable."
    ),
    allow: list[str] = typer.Option(
        [],
        "--allow",
        help="Serve only these values: FIELD=V1,V2 for corpus, encoder, dim, index, reduce, retriever, llm or backend (repeatable; llm defaults to extractive only, backend to each encoder's default).",
    ),
    config: Path = typer.Option(
        None, "--config", help="TOML file with the same settings ([allow] corpus = [...], build_missing = true, ...)."
    ),
    warm: bool = typer.Option(
        True,
        help="Open (and build if missing) the default retriever (builtin, minilm, flat, hybrid) and load the screen "
        "verifier (exported to ONNX first in a child process if missing) before serving.",
    ),
    build_missing: bool = typer.Option(
        None,
        "--build-missing/--no-build-missing",
        help="Build a missing index (FAISS or BM25) when a request needs it. Off by default: missing indexes answer 404.",
    ),
    max_open: int = typer.Option(
        None, min=1, help="At most this many retrievers stay open (least recently used dropped first). Default 8."
    ),
    max_memory: int = typer.Option(
        None, "--max-memory", min=1, help="MB: the open retrievers' estimated memory stays under this. Default 4096."
    ),
    max_builds: int = typer.Option(None, min=1, help="Index builds at once; more answer 503. Default 1."),
    max_inflight: int = typer.Option(
        None,
        min=0,
        help="At most this many /search and /ask requests compute at once; 0 = no limit. Default 2 per CPU core (2-32).",
    ),
    max_queued: int = typer.Option(
        None,
        min=0,
        help="At most this many more wait for a slot; past them 503 with Retry-After. Default 16 per slot, at least 64.",
    ),
    max_body: int = typer.Option(
        None, min=1024, help="Request body limit in bytes (default 65536); larger bodies get 413."
    ),
    api_key_file: Path = typer.Option(
        None,
        help="File holding the API key (else RAG_API_KEY); every endpoint but /health then needs 'Authorization: Bearer <key>'.",
    ),
    allowed_host: list[str] = typer.Option(
        [], "--allowed-host", help="Host header values to accept (default localhost names; '*' for any)."
    ),
    cors_origin: list[str] = typer.Option(
        [], "--cors-origin", help="Origins allowed by CORS (default none: CORS off)."
    ),
    timeout_keep_alive: float = typer.Option(
        None, min=0.1, help="Seconds an idle keep-alive connection stays open. Default 5."
    ),
    header_timeout: float = typer.Option(
        None, min=0.1, help="Seconds a connection may take to send a whole request head. Default 10."
    ),
    request_timeout: float = typer.Option(
        None, min=0.01, help="Seconds a /search or /ask may compute before the client gets 504. Default 300."
    ),
    body_timeout: float = typer.Option(
        None, min=0.1, help="Seconds a request may take to send its body once the head is in (else 408). Default 30."
    ),
    torch_threads: int = typer.Option(
        None, min=0, help="torch threads per request (requests already run in parallel); 0 = torch default. Default 1."
    ),
    log_level: str = typer.Option(
        "info", help="uvicorn log level; access logs are JSON lines on the rag.access logger."
    ),
    watch: bool = typer.Option(
        False,
        "--watch",
        help="Watch the --corpus folders (watchfiles) and update their indexes in the background when files change.",
    ),
) -> None:
    """Serve /ask, /search, the OpenAI-compatible /v1 endpoints, /health, /config, /indexes and /metrics over HTTP."""
    from rag.config import RagError
    from rag.serve import run

    flags = {
        "encoders": list(encoder) or None,
        "build_missing": build_missing,
        "max_open": max_open,
        "max_memory_mb": max_memory,
        "max_builds": max_builds,
        "max_inflight": max_inflight,
        "max_queued": max_queued,
        "max_body": max_body,
        "allowed_hosts": list(allowed_host) or None,
        "cors_origins": list(cors_origin) or None,
        "watch": watch or None,
        "header_timeout": header_timeout,
        "body_timeout": body_timeout,
        "request_timeout": request_timeout,
        "keep_alive": timeout_keep_alive,
        "torch_threads": torch_threads,
    }
    try:
        policy = run.serve_policy(config, allow, corpus, flags, api_key_file, warm)
    except RagError as exc:
        err_console.print(f"[red]error:[/] {safe(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
    try:
        run.start(
            policy,
            host,
            port,
            log_level,
            prepare=warm,
            warn=lambda line: err_console.print(f"[yellow]warning:[/] {safe(line)}", soft_wrap=True),
            say=lambda line: err_console.print(safe(line), soft_wrap=True),
            listening=console.print,
        )
    except run.CannotBind as exc:
        err_console.print(f"[red]error:[/] {safe(str(exc))}")
        raise typer.Exit(1) from None


def bench_serve(
    requests: int = typer.Option(50, "--requests", "-n", min=1, help="Concurrent requests per endpoint."),
    sequential: int = typer.Option(
        10, min=0, help="Requests sent one at a time first, as the single-request baseline."
    ),
    corpus: str = typer.Option(DEFAULTS.corpus, help="Corpus to query."),
    index: str = typer.Option(DEFAULTS.index, help="Index kind: " + choices_help(INDEX_KINDS)),
    retriever: str = typer.Option(DEFAULTS.retriever, help="Retriever: " + choices_help(RETRIEVERS)),
    server: str = typer.Option("", help="Bench a running server at this URL instead of starting one."),
    torch_threads: list[int] = typer.Option(
        [1, 0], "--torch-threads", help="Start one server per value (serve --torch-threads) and compare."
    ),
    max_inflight: int = typer.Option(0, min=0, help="--max-inflight of the started servers (0 = no limit)."),
    timeout: float = typer.Option(300.0, help="Per-request timeout, seconds."),
    startup_timeout: float = typer.Option(300.0, help="Seconds to wait for a started server to be healthy."),
    api_key: str = typer.Option(
        "",
        envvar="RAG_API_KEY",
        show_default=False,
        help="Send this Bearer key (and start servers with it); default $RAG_API_KEY.",
    ),
) -> None:
    """Fire N concurrent /search then N concurrent /ask (extractive) requests at a real server; print p50/p95 and errors."""
    from rag.bench.serve_load import bench_servers

    settings = {"corpus": corpus, "index": index, "retriever": retriever}
    try:
        rows = bench_servers(
            settings,
            requests,
            sequential,
            server,
            tuple(torch_threads),
            max_inflight,
            timeout,
            startup_timeout,
            api_key,
            say=console.print,
        )
    except RuntimeError as exc:
        err_console.print(f"[red]error:[/] {safe(str(exc))}")
        raise typer.Exit(1) from None
    _print_rows(rows, settings)
    if sum(r["errors"] for r in rows):
        raise typer.Exit(1)


def _print_rows(rows: list[dict], settings: dict) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    table = Table(title=f"rag bench serve {settings}; {os.cpu_count()} cores, load average {load}")
    for column in ("server", "endpoint", "mode", "n", "errors", "p50 ms", "p95 ms", "req/s"):
        table.add_column(column, justify="left" if column in ("server", "endpoint", "mode") else "right", no_wrap=True)
    for r in rows:
        table.add_row(
            r["server"],
            r["endpoint"],
            r["mode"],
            str(r["requests"]),
            str(r["errors"]) + (f" {r['error_kinds']}" if r["errors"] else ""),
            f"{r['p50_ms']:.0f}",
            f"{r['p95_ms']:.0f}",
            f"{r['rps']:.1f}",
        )
    console.print(table)
    first = rows[0]["server"]
    for r in rows:
        base = next(
            (
                b
                for b in rows
                if b["server"] == r["server"] and b["endpoint"] == r["endpoint"] and b["mode"] == "serial"
            ),
            None,
        )
        if r["mode"] == "concurrent" and base:
            console.print(
                f"{r['server']} {r['endpoint']}: {r['requests']} at once vs one at a time: "
                f"p50 latency x{r['p50_ms'] / base['p50_ms']:.1f}, throughput x{r['rps'] / base['rps']:.2f}"
            )
        ref = next(
            (b for b in rows if b["server"] == first and b["endpoint"] == r["endpoint"] and b["mode"] == r["mode"]),
            None,
        )
        if r["server"] != first and ref:
            console.print(
                f"{r['server']} vs {first}, {r['endpoint']} {r['mode']}: p50 x{r['p50_ms'] / ref['p50_ms']:.2f}, "
                f"p95 x{r['p95_ms'] / ref['p95_ms']:.2f}, throughput x{r['rps'] / ref['rps']:.2f}"
            )
