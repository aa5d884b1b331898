"""HTTP service: a FastAPI app over the shared retrievers and the agent (`rag serve`).

Endpoints: POST /ask, POST /search, GET /health, GET /indexes; OpenAPI at /docs.
Retrievers come from one rag.retrieve.RetrieverPool (the same cache the agent uses): they load once per settings,
are shared by all requests, and are swapped for the new version when an index is rebuilt on disk.
Request fields are rag.retrieve.RetrievalSettings; their vocabularies come from where each is declared.
"""

from __future__ import annotations

import threading
import time
from contextlib import asynccontextmanager, nullcontext
from typing import Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from rag import __version__
from rag.agent.llm import LLM_BACKENDS
from rag.config import MAX_QUESTION_CHARS, RagError, check_question, index_dir
from rag.corpus import NAMED_CORPORA
from rag.encoders import ENCODER_NAMES
from rag.index import INDEX_KINDS
from rag.reduce import REDUCERS
from rag.retrieve import FUSIONS, MAX_K, RETRIEVERS, RetrievalSettings, RetrieverPool
from rag.store import list_indexes as store_listing

DEFAULTS = RetrievalSettings()


def vocabulary(names) -> object:
    """A Literal type of the names a field accepts, so OpenAPI lists them (names come from their one declaration)."""
    return Literal[tuple(names)]


# ---------------------------------------------------------------- request models

class SettingsIn(BaseModel):
    """A question plus rag.retrieve.RetrievalSettings: which corpus, encoder, width d, index kind and retriever."""

    question: str = Field(..., description=f"1 to {MAX_QUESTION_CHARS} characters",
                          examples=["What does the embedding dimension control?"])
    corpus: str = Field(DEFAULTS.corpus, description="builtin | scifact | hotpotqa | squad (or a corpus the server was started with)")
    encoder: str = Field(DEFAULTS.encoder, description="encoder name, e.g. minilm")
    dim: int | None = Field(DEFAULTS.dim, ge=1, le=16384, description="reduced width d; null keeps the encoder's full width")
    index: vocabulary(INDEX_KINDS) = Field(DEFAULTS.index, description="FAISS index kind")
    reduce: vocabulary(REDUCERS) = Field(DEFAULTS.reduce, description="how vectors are reduced to d")
    retriever: vocabulary(RETRIEVERS) = DEFAULTS.retriever
    k: int = Field(DEFAULTS.k, ge=1, le=MAX_K)
    fusion: vocabulary(FUSIONS) = DEFAULTS.fusion
    weight: float = Field(DEFAULTS.weight, ge=0.0, le=1.0, description="weight of the dense side in hybrid fusion")

    @field_validator("question")
    @classmethod
    def question_is_sane(cls, value: str) -> str:
        try:
            return check_question(value)
        except RagError as exc:
            raise ValueError(str(exc)) from None

    def settings(self) -> RetrievalSettings:
        return RetrievalSettings(**self.model_dump(exclude={"question", "llm", "max_steps"}))


class SearchRequest(SettingsIn):
    pass


class AskRequest(SettingsIn):
    llm: vocabulary(LLM_BACKENDS) = "extractive"
    max_steps: int = Field(4, ge=1, le=20, description="bound on the agent's retrieve/rewrite loop")


class PassageOut(BaseModel):
    id: str
    title: str
    source: str
    score: float
    text: str


class SearchResponse(BaseModel):
    question: str
    passages: list[PassageOut]
    corpus: str
    retriever: str
    encoder: str | None = None
    dim: int | None = None
    index: str | None = None
    reduce: str | None = None
    device: str
    timings_ms: dict[str, float]


# ---------------------------------------------------------------- the app

def list_indexes() -> list[dict]:
    """Every built index under RAG_INDEX_DIR (the index store's listing), without per-file checksums."""
    return [{k: v for k, v in m.items() if k != "files"} for m in store_listing()]


def create_app(*, corpora: list[str] | None = None, encoders: list[str] | None = None, build_missing: bool = True,
               warm: list[dict] | None = None, pool: RetrieverPool | None = None, max_inflight: int = 0,
               torch_threads: int = 0) -> FastAPI:
    """The FastAPI app.

    corpora: extra corpora (folder paths) this server may open besides the named ones.
    encoders: extra encoders (e.g. 'lm:<checkpoint dir>') besides the registry's named ones.
    build_missing: build an index on first request when it is not on disk (else answer 404).
    warm: settings dicts ({corpus, encoder, dim, index, reduce, retriever}) opened at start-up.
    max_inflight: at most this many /search and /ask requests compute at once (the rest queue); 0 = no limit.
    torch_threads: torch intra-op threads for this process, set at start-up (0 = leave torch's default).
      Requests already run in parallel threads, so 1 avoids oversubscribing the cores (see `rag bench serve`).
    """
    pool = pool or RetrieverPool(build_missing=build_missing)
    allowed_corpora = list(NAMED_CORPORA) + [str(c) for c in (corpora or [])]
    # Prefixed encoder names such as 'lm:<dir>' name a path on the server: served only when listed at start-up.
    allowed_encoders = list(ENCODER_NAMES) + [str(e) for e in (encoders or []) if e not in ENCODER_NAMES]
    slots = threading.BoundedSemaphore(max_inflight) if max_inflight > 0 else nullcontext()
    started = time.time()

    def open_retriever(request: SettingsIn):
        if request.corpus not in allowed_corpora:
            raise HTTPException(404, f"unknown corpus '{request.corpus}'; valid corpora: {', '.join(allowed_corpora)}")
        if request.encoder not in allowed_encoders:
            raise HTTPException(404, f"unknown encoder '{request.encoder}'; valid encoders: {', '.join(allowed_encoders)}")
        try:
            return pool.get(request.settings())
        except RagError as exc:
            raise http_error(exc) from None

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if torch_threads > 0:
            import torch

            torch.set_num_threads(torch_threads)
        for settings in warm or []:  # open before serving, so the first request is not slow
            await run_in_threadpool(pool.get, RetrievalSettings(**settings))
        yield

    app = FastAPI(title="rag", version=__version__, lifespan=lifespan,
                  description="Agentic retrieval over FAISS indexes at any embedding width d.")
    app.state.pool = pool

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError):
        return JSONResponse(status_code=422, content={"detail": one_line(exc.errors()), "errors": plain(exc.errors())})

    @app.get("/health")
    def health() -> dict:
        """Liveness plus what is loaded."""
        return {"status": "ok", "version": __version__, "uptime_s": round(time.time() - started, 1),
                "loaded": pool.loaded(), "opens": pool.opens, "swaps": pool.swaps, "swap_failures": pool.swap_failures}

    @app.get("/indexes")
    def indexes() -> dict:
        """Built indexes on disk (RAG_INDEX_DIR)."""
        try:
            return {"index_dir": str(index_dir()), "indexes": list_indexes()}
        except RagError as exc:
            raise http_error(exc) from None

    @app.post("/search", response_model=SearchResponse)
    def search(request: SearchRequest) -> dict:
        """Top-k passages for the question (dense, bm25 or hybrid); the same JSON as `rag search --json`."""
        retriever = open_retriever(request)
        try:
            with slots:
                hits = retriever.search(request.question)
        except RagError as exc:
            raise http_error(exc) from None
        return retriever.result(request.question, hits)

    @app.post("/ask")
    def ask(request: AskRequest) -> dict:
        """Run the agent; the same JSON as `rag ask --json`."""
        retriever = open_retriever(request)
        try:
            from rag.agent import run_agent
        except ImportError as exc:
            raise HTTPException(503, f"the agent is not available in this install ({exc}); use /search") from None
        try:
            with slots:
                return run_agent(request.question, retriever.settings, retriever=retriever, llm=request.llm,
                                 max_steps=request.max_steps)
        except RagError as exc:
            raise http_error(exc) from None

    return app


def http_error(exc: RagError) -> HTTPException:
    """Map a library error to an HTTP status: unknown or missing things 404, broken indexes 409, bad values 422."""
    name = type(exc).__name__
    message = str(exc)
    if name == "IndexMissing" or message.startswith("unknown ") or " not found" in message:
        return HTTPException(404, message)
    if name in ("IndexMismatch", "IndexCorrupt"):
        return HTTPException(409, message)
    return HTTPException(422, message)


def one_line(errors) -> str:
    parts = []
    for error in errors:
        if error.get("type") == "json_invalid":
            parts.append("the request body is not valid JSON; send an object such as {\"question\": \"...\"}")
            continue
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "invalid request"


def plain(errors) -> list[dict]:
    return [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type", "")} for e in errors]
