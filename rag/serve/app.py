"""HTTP service: a FastAPI app over the shared retrievers and the agent (`rag serve`).

Endpoints: POST /ask (JSON, or server-sent events with `Accept: text/event-stream`), POST /search, GET /health,
GET /config, GET /indexes, GET /metrics, and the OpenAI-compatible GET /v1/models and POST /v1/chat/completions.
OpenAPI at /openapi.json, Swagger UI at /docs from local files (no CDN).

Streaming format of /ask: one `step` event per agent node as it finishes (the same dicts as `steps` in the JSON),
then one `answer` event (the same JSON as `rag ask --json`), then `done`; an `error` event replaces the answer
when the run fails after the stream began.
"""

from __future__ import annotations

import logging
import time
from contextlib import asynccontextmanager

import anyio
import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from rag.config import VERSION, RagError
from rag.index.store import list_indexes as store_listing
from rag.retrieve import RETRIEVER_KINDS, RetrievalSettings
from rag.serve.demo import add_demo
from rag.serve.guard import ApiKey, BodyGuard, Observe, key_ok
from rag.serve.models import (
    AskRequest,
    AskResponse,
    SearchRequest,
    SearchResponse,
    error_responses,
    one_line,
    plain,
    sse_content,
)
from rag.serve.openai_api import add_openai_routes, served_configurations
from rag.serve.policy import ServePolicy, hide_paths, parse_corpora
from rag.serve.pool import ServePool
from rag.serve.service import Service, sse

log = logging.getLogger("rag.serve")
PROBE_THREADS = 2  # /health and /metrics at once, beside the worker threads
MAX_ERRORS_SHOWN = 10  # validation problems listed in a 422; the rest are counted
MAX_DETAIL_CHARS = 2000  # an error message longer than this is cut


def bounded(detail: str) -> str:
    return detail if len(detail) <= MAX_DETAIL_CHARS else detail[: MAX_DETAIL_CHARS - 1] + "…"


SSE_RESPONSE = sse_content("event: step (one per agent node), then event: answer (the JSON above), then event: done")


def create_app(policy: ServePolicy | None = None, *, pool: ServePool | None = None, **settings) -> FastAPI:
    """The FastAPI app under an operator policy (rag.serve.policy.ServePolicy; keyword settings build one).

    `corpora` may be a list of folders ('name=path' or a path, served by the folder's name) or a dict."""
    if isinstance(settings.get("corpora"), list):
        settings["corpora"] = parse_corpora(settings["corpora"])
    policy = policy or ServePolicy(**settings)
    policy.check_start()  # RagError naming the key: a missing corpus folder, a file as RAG_CACHE_DIR, ...
    service = Service(policy, pool)
    started = time.time()

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if policy.torch_threads > 0:
            import torch

            torch.set_num_threads(policy.torch_threads)
        for warm in policy.warm:  # the operator's own choice: opened (and built if missing) before serving
            await run_in_threadpool(service.pool.get, RetrievalSettings(**warm), None, True)
        watcher = None
        if policy.watch:
            from rag.serve.watch import Watcher

            watcher = app.state.watcher = Watcher(policy.corpora, service.pool).start()
            service.metrics.watch(watcher)
        yield
        if watcher is not None:
            watcher.stop()

    app = FastAPI(
        title="rag",
        version=VERSION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Agentic retrieval over FAISS indexes at any embedding width d.",
        responses=error_responses(400, 401, 408, 413),
    )  # the guards answer these on any path
    app.state.service = service
    app.state.pool = service.pool
    add_routes(app, service, started)
    add_openai_routes(app, service)
    add_docs(app)
    add_demo(app, service)  # the demo page at / (rag/serve/demo.py)
    # Outermost first at request time: metrics and logs, hosts, CORS, the key, then the body checks.
    app.add_middleware(BodyGuard, max_body=policy.max_body, body_timeout=policy.body_timeout)
    app.add_middleware(ApiKey, key=policy.api_key)
    if policy.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=policy.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type", "accept"],
        )
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=policy.allowed_hosts)
    app.add_middleware(Observe, metrics=service.metrics, routes=app.router.routes)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError):
        shown = exc.errors()[:MAX_ERRORS_SHOWN]  # 7,000 unknown keys once made a 936 KB answer
        detail = hide_paths(one_line(shown))
        if len(exc.errors()) > MAX_ERRORS_SHOWN:
            detail += f"; and {len(exc.errors()) - MAX_ERRORS_SHOWN} more problems"
        return JSONResponse(status_code=422, content={"detail": bounded(detail), "errors": plain(shown)})

    @app.exception_handler(RecursionError)
    async def too_deep(_: Request, exc: RecursionError):
        return JSONResponse(status_code=400, content={"detail": "the request is nested too deeply"})

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):  # JSON like every other error, never a path
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return JSONResponse(status_code=500, content={"detail": "internal server error; see the server log"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        content = {"detail": bounded(str(exc.detail))}
        if request.url.path.startswith("/v1/"):  # OpenAI clients read error.message
            content["error"] = {"message": content["detail"], "type": "invalid_request_error", "code": exc.status_code}
        return JSONResponse(status_code=exc.status_code, content=content, headers=getattr(exc, "headers", None))

    return app


def add_routes(app: FastAPI, service: Service, started: float) -> None:
    policy, pool = service.policy, service.pool

    probes: list[anyio.CapacityLimiter] = []  # threads of their own for /health and /metrics, made on first use

    async def probe(work):
        """work() in a probe thread: never queued behind the worker threads busy with /search and /ask."""
        if not probes:
            probes.append(anyio.CapacityLimiter(PROBE_THREADS))
        return await anyio.to_thread.run_sync(work, limiter=probes[0])

    @app.get("/health")
    async def health(http: Request) -> dict:
        """Liveness: 'ok' and the version for anyone, answered on the event loop; with the API key (or with none
        set) also what is loaded, from a probe thread of its own (never queued behind busy worker threads)."""
        if not key_ok(http.headers.raw, (policy.api_key or "").encode()):
            return {"status": "ok", "version": VERSION}
        return await probe(health_details)

    def health_details() -> dict:
        loaded = [service.public(dict(row)) for row in pool.loaded()]
        return {
            "status": "ok",
            "version": VERSION,
            "uptime_s": round(time.time() - started, 1),
            "loaded": loaded,
            "opens": pool.opens,
            "swaps": pool.swaps,
            "swap_failures": pool.swap_failures,
            "evictions": pool.evictions,
            "builds": pool.builds_done,
            **({"watch": watcher.health()} if (watcher := getattr(app.state, "watcher", None)) else {}),
        }

    @app.get("/config")
    def config() -> dict:
        """What this server serves: the allowed values of every request field, defaults and limits, and the
        configurations that are built or buildable now (`configurations`, each with its /v1 model id: the page's
        pickers and Side by side defaults come from it)."""
        kinds = {name: {"dense": k.dense, "sparse": k.sparse} for name, k in RETRIEVER_KINDS.items()}
        return {**policy.public(), "configurations": served_configurations(service), "retriever_kinds": kinds}

    @app.get("/indexes")
    def indexes() -> dict:
        """Built indexes on disk that this server may serve (no paths, no per-file checksums)."""
        try:
            return {"indexes": [row for m in store_listing() if (row := public_manifest(service, m))]}
        except RagError as exc:
            raise service.http_error(exc) from None

    @app.get("/metrics", response_class=Response)
    async def metrics() -> Response:
        """Prometheus metrics: requests and latency by endpoint, pool size and memory, builds, evictions, requests
        computing and waiting (from a probe thread, like /health)."""
        text = await probe(service.metrics.text)
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.post(
        "/search", response_model=SearchResponse, responses=error_responses(400, 403, 404, 409, 413, 422, 503, 504)
    )
    async def search(request: SearchRequest) -> dict:
        """Top-k passages for the question (dense, bm25 or hybrid); the same JSON as `rag search --json`."""
        return await service.search_within_deadline(request.question, request.settings())

    @app.post(
        "/ask",
        response_model=AskResponse,
        responses={200: {"content": SSE_RESPONSE}, **error_responses(400, 403, 404, 409, 413, 422, 503, 504)},
    )
    async def ask(request: AskRequest, http: Request):
        """Run the agent; the same JSON as `rag ask --json`. With `Accept: text/event-stream`: a `step` event per
        agent node as it finishes, then `answer` (that JSON), then `done`."""
        retriever = await run_in_threadpool(service.open, request.settings(), request.llm)
        run = service.agent(request.question, retriever, request.agent_settings())
        if "text/event-stream" not in http.headers.get("accept", ""):
            return await service.ask(run, http.is_disconnected)

        ticket = await service.slots.enter()  # a 503 when full, before the stream starts

        async def stream():
            async for event, data in service.events(run, ticket):
                yield sse(event, data)
            yield sse("done", {})

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
            background=BackgroundTask(ticket.drop),  # the slot back if the stream never started
        )


def public_manifest(service: Service, manifest: dict) -> dict | None:
    """An index listing row as clients see it: allowed corpora only, served names, no paths, no checksums."""
    corpus = service.policy.served_name(manifest.get("corpus", ""))
    allowed = service.policy.allowed("corpus")
    if corpus not in allowed:
        return None
    row = {k: v for k, v in manifest.items() if k not in ("files", "path", "corpus_safe_name")}
    row["corpus"] = corpus
    row["encoder"] = service.policy.served_encoder(row.get("encoder"))
    return {k: service.clean(v) if isinstance(v, str) else v for k, v in row.items()}


def add_docs(app: FastAPI) -> None:
    """Swagger UI 5 at /docs, served from the fastapi-offline package (rag.serve.demo.swagger_ui_dir): it reads the
    OpenAPI 3.1 schema FastAPI writes (the swagger-ui-bundle package ships 4.x, which cannot). The page and its files
    load without the API key, like the demo page; its script fetches /openapi.json and sends requests with the key."""
    from fastapi.responses import FileResponse

    from rag.serve.demo import PAGE_CSP, STATIC_DIR

    @app.get("/docs", include_in_schema=False)
    def docs() -> FileResponse:
        headers = {
            "Content-Security-Policy": PAGE_CSP,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        }
        return FileResponse(STATIC_DIR / "docs.html", headers=headers)
