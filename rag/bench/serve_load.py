"""The load generator behind `rag bench serve`: concurrent and one-at-a-time /search and /ask requests against a
real server, timed per request and summarised (p50, p95, errors, requests per second)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rag.bench.server_process import free_port, start_server_process, stop_server_process, wait_healthy
from rag.config import percentile

BENCH_QUESTIONS = [
    "What does the embedding dimension control?",
    "How many parameters does a 50k x 768 embedding table have?",
    "How much memory does a 128k x 4096 table take in fp16?",
    "How are rotary position embeddings applied to queries and keys?",
    "What is the square-root heuristic for choosing d?",
    "Why are input and output embeddings tied?",
    "How much training memory does Adam need per parameter?",
    "How does ALiBi bias attention scores?",
    "Why is an embedding lookup the same as a one-hot matrix product?",
    "How do sinusoidal position encodings work?",
]


def fire(url: str, path: str, payloads: list[dict], timeout: float, headers: dict | None = None) -> dict:
    """Send all payloads at once (one asyncio task each) and time every request."""
    import asyncio

    import httpx

    async def one(client: httpx.AsyncClient, payload: dict) -> tuple[float, int | str]:
        t0 = time.perf_counter()
        try:
            response = await client.post(url + path, json=payload)
            outcome: int | str = response.status_code
        except httpx.HTTPError as exc:
            outcome = type(exc).__name__
        return (time.perf_counter() - t0) * 1000, outcome

    async def run_all():
        limits = httpx.Limits(max_connections=len(payloads), max_keepalive_connections=len(payloads))
        async with httpx.AsyncClient(timeout=timeout, limits=limits, headers=headers) as client:
            t0 = time.perf_counter()
            results = await asyncio.gather(*(one(client, p) for p in payloads))
            return results, (time.perf_counter() - t0)

    results, wall = asyncio.run(run_all())
    return summarise(path, results, wall)


def fire_sequential(url: str, path: str, payloads: list[dict], timeout: float, headers: dict | None = None) -> dict:
    """Send payloads one after another (the single-request baseline)."""
    import httpx

    results = []
    with httpx.Client(timeout=timeout, headers=headers) as client:
        t_all = time.perf_counter()
        for payload in payloads:
            t0 = time.perf_counter()
            try:
                outcome: int | str = client.post(url + path, json=payload).status_code
            except httpx.HTTPError as exc:
                outcome = type(exc).__name__
            results.append(((time.perf_counter() - t0) * 1000, outcome))
        wall = time.perf_counter() - t_all
    return summarise(path, results, wall, mode="serial")


def summarise(path: str, results: list[tuple[float, int | str]], wall_s: float, mode: str = "concurrent") -> dict:
    import numpy as np

    latencies = np.array([ms for ms, _ in results])
    errors = [outcome for _, outcome in results if outcome != 200]
    return {
        "endpoint": path,
        "mode": mode,
        "requests": len(results),
        "errors": len(errors),
        "error_kinds": sorted({str(e) for e in errors}),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "max_ms": float(latencies.max()),
        "wall_s": wall_s,
        "rps": len(results) / wall_s,
    }


def load_rows(
    url: str,
    settings: dict,
    questions: list[str],
    sequential: int,
    timeout: float,
    headers: dict | None = None,
    say: Callable[[str], None] = print,
) -> list[dict]:
    """A warm-up request per endpoint (untimed), then the one-at-a-time baseline, then everything at once."""
    search = [{"question": q, **settings, "k": 5} for q in questions]
    ask = [{"question": q, **settings, "llm": "extractive"} for q in questions]
    for path, payload in (("/search", search[0]), ("/ask", ask[0])):
        warmup = fire(url, path, [payload], timeout, headers)
        if warmup["errors"]:
            say(f"warm-up {path} failed: {warmup['error_kinds']}")
    rows = []
    if sequential:
        rows += [
            fire_sequential(url, "/search", search[:sequential], timeout, headers),
            fire_sequential(url, "/ask", ask[:sequential], timeout, headers),
        ]
    return rows + [fire(url, "/search", search, timeout, headers), fire(url, "/ask", ask, timeout, headers)]


def bench_questions(corpus: str) -> list[str]:
    """The named data set's own queries, else questions about the built-in corpus."""
    from rag.config import RagError
    from rag.data.corpus import NAMED_CORPORA, load_corpus

    if corpus in NAMED_CORPORA and corpus != "builtin":
        try:
            queries = [q.text for q in load_corpus(corpus).queries[:200]]
        except RagError:
            queries = []
        if queries:
            return queries
    return BENCH_QUESTIONS


def bench_servers(
    settings: dict,
    requests: int,
    sequential: int,
    server: str = "",
    torch_threads: tuple[int, ...] = (1, 0),
    max_inflight: int = 0,
    timeout: float = 300.0,
    startup_timeout: float = 300.0,
    api_key: str = "",
    say: Callable[[str], None] = print,
) -> list[dict]:
    """Rows of figures for each server: the one at `server`, else one started per --torch-threads value.
    A server that does not start raises RuntimeError (with the tail of its log)."""
    import os

    pool = bench_questions(settings["corpus"])
    questions = [pool[i % len(pool)] for i in range(requests)]
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    rows = []
    configs = [("external", None)] if server else [(f"torch={t or 'auto'}", t) for t in torch_threads]
    for label, threads in configs:
        proc, url = None, server.rstrip("/")
        log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"rag-bench-serve-{os.getpid()}-{threads}.log"
        try:
            if not url:
                port = free_port()
                url = f"http://127.0.0.1:{port}"
                say(f"starting rag serve --torch-threads {threads} on {url} (log: {log_path}) ...")
                t0 = time.perf_counter()
                proc = start_server_process(
                    port,
                    log_path,
                    ["--torch-threads", str(threads), "--max-inflight", str(max_inflight)],
                    env={"RAG_API_KEY": api_key} if api_key else None,
                )
                wait_healthy(url, proc, startup_timeout, log_path)
                say(f"server healthy after {time.perf_counter() - t0:.1f} s")
            rows += [
                {**r, "server": label} for r in load_rows(url, settings, questions, sequential, timeout, headers, say)
            ]
        finally:
            if proc is not None:
                stop_server_process(proc)
    return rows
