"""HTTP service: a FastAPI app over the shared retrievers and the agent (`rag serve`).

Endpoints: POST /ask, POST /search, GET /health, GET /indexes; OpenAPI at /docs.
Retrievers (encoder model + index + BM25) load once per settings and are shared by all requests.
When an index is rebuilt while serving, the index store flips a symlink to a new complete version;
each request compares the version it would read with the one loaded and swaps the cached retriever
if it changed, so a request sees either the old index or the new one, never a partial one.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, field_validator

from rag import __version__
from rag.config import MAX_QUESTION_CHARS, RagError, index_dir
from rag.corpus import NAMED_CORPORA

RETRY_REOPEN_S = 5.0  # after a failed reopen of a rebuilt index, serve the old one this long before retrying

# ---------------------------------------------------------------- request models

def _check_question(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("the question is empty; send a non-empty 'question'")
    if len(value) > MAX_QUESTION_CHARS:
        raise ValueError(f"the question has {len(value)} characters; the limit is {MAX_QUESTION_CHARS}")
    return value.strip()


class RetrievalSettings(BaseModel):
    """Which corpus, encoder, width d and index kind to search."""

    question: str = Field(..., description=f"1 to {MAX_QUESTION_CHARS} characters", examples=["What does the embedding dimension control?"])
    corpus: str = Field("builtin", description="builtin | scifact | hotpotqa | squad (or a corpus the server was started with)")
    encoder: str = Field("minilm", description="encoder name, e.g. minilm")
    dim: int | None = Field(None, ge=1, le=16384, description="reduced width d; null keeps the encoder's full width")
    index: str = Field("flat", description="FAISS index kind: flat | ivf-flat | ivf-pq | hnsw | sq8 | binary")
    reduce: Literal["pca", "truncate", "whiten"] = Field("pca", description="how vectors are reduced to d")

    @field_validator("question")
    @classmethod
    def question_is_sane(cls, value: str) -> str:
        return _check_question(value)


class SearchRequest(RetrievalSettings):
    retriever: Literal["dense", "bm25", "hybrid"] = "hybrid"
    k: int = Field(5, ge=1, le=100)


class AskRequest(RetrievalSettings):
    retriever: Literal["dense", "bm25", "hybrid"] = "hybrid"
    llm: str = Field("extractive", description="extractive | local | openai")
    max_steps: int = Field(4, ge=1, le=20, description="bound on the agent's retrieve/rewrite loop")
    k: int = Field(5, ge=1, le=50)


class PassageOut(BaseModel):
    id: str
    title: str
    source: str
    score: float
    text: str


class SearchResponse(BaseModel):
    question: str
    passages: list[PassageOut]
    timings: dict[str, float] = {}


# ---------------------------------------------------------------- shared retrievers

@dataclass(frozen=True)
class RetrieverKey:
    corpus: str
    encoder: str
    dim: int | None
    index: str
    reduce: str
    retriever: str


@dataclass
class _Entry:
    retriever: object
    link: Path | None  # indexes/<corpus>/<name>: the symlink a rebuild flips (None for bm25)
    version: str | None  # the version folder this retriever loaded
    loaded_at: float = field(default_factory=time.time)
    requests: int = 0
    retry_at: float = 0.0  # after a failed reopen, when to try again

    def is_current(self) -> bool:
        """True while the index symlink still points at the version this retriever loaded (one readlink)."""
        return self.link is None or os.path.realpath(self.link) == self.version


def _link_and_version(retriever) -> tuple[Path | None, str | None]:
    loaded = getattr(retriever, "loaded", None)
    if loaded is None:
        return None, None
    from rag.index import index_name, index_path

    m = loaded.manifest
    link = index_path(retriever.corpus.safe_name, index_name(m["encoder"], m["dim"], m["kind"], m["reduce"]))
    return link, str(loaded.path)


class RetrieverPool:
    """Retrievers keyed by settings, opened once and shared; swapped when their index is rebuilt on disk.

    A rebuild writes a new version folder and flips the index symlink atomically. Each get() compares the
    symlink's target with the version the cached retriever loaded; on a change it opens the new version and
    swaps the cache entry. Requests already running keep the old retriever object (fully in memory), and requests
    that arrive while the new version loads are served by the old one, so every request sees one whole index and
    none waits for the reload. If opening the new version fails (e.g. it is pruned by a second rebuild
    while loading), the old retriever keeps serving and the next request tries again.
    """

    def __init__(self, build_missing: bool = True):
        self.build_missing = build_missing
        self._entries: dict[RetrieverKey, _Entry] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[RetrieverKey, threading.Lock] = {}
        self.opens = self.swaps = self.swap_failures = 0

    def _key_lock(self, key: RetrieverKey) -> threading.Lock:
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def _use(self, entry: _Entry):
        with self._lock:
            entry.requests += 1
        return entry.retriever

    def get(self, key: RetrieverKey):
        """The current retriever for key: opened on first use, reopened when the index on disk was replaced."""
        entry = self._entries.get(key)
        if entry is not None and (entry.is_current() or time.monotonic() < entry.retry_at):
            return self._use(entry)
        lock = self._key_lock(key)
        if entry is not None and not lock.acquire(blocking=False):
            return self._use(entry)  # another request is opening the new version; the old one keeps serving
        if entry is None:
            lock.acquire()  # first use: wait for the one opener
        try:
            entry = self._entries.get(key)
            if entry is not None and entry.is_current():
                return self._use(entry)
            try:
                retriever = self._open(key)
            except RagError:
                if entry is None:
                    raise
                self.swap_failures += 1  # keep serving the whole old index; try again in a few seconds
                entry.retry_at = time.monotonic() + RETRY_REOPEN_S
                return self._use(entry)
            link, version = _link_and_version(retriever)
            self.opens += 1
            self.swaps += entry is not None
            self._entries[key] = new = _Entry(retriever, link, version)
            return self._use(new)
        finally:
            lock.release()

    def _open(self, key: RetrieverKey):
        from rag.retrieve import Retriever

        return Retriever.open(corpus=key.corpus, encoder=key.encoder, dim=key.dim, index=key.index,
                              reduce=key.reduce, mode=key.retriever, build_if_missing=self.build_missing)

    def loaded(self) -> list[dict]:
        return [{**key.__dict__, "version": Path(entry.version).name if entry.version else None,
                 "loaded_at": round(entry.loaded_at, 3), "requests": entry.requests}
                for key, entry in list(self._entries.items())]


# ---------------------------------------------------------------- the app

def _known_encoders(extra: list[str]) -> list[str]:
    """Encoder names a request may use: the registry's exact names plus those the server was started with.

    Prefixed names such as 'lm:<dir>' name a path on the server, so they are only served when listed in extra.
    """
    from rag import encoders

    return list(encoders.ENCODER_NAMES) + [e for e in extra if e not in encoders.ENCODER_NAMES]


def _index_kinds() -> tuple[str, ...]:
    from rag.index import INDEX_KINDS

    return tuple(INDEX_KINDS)


def list_indexes() -> list[dict]:
    """Every built index under RAG_INDEX_DIR (the index store's listing), without per-file checksums."""
    from rag.index import list_indexes as store_listing

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
    extra_encoders = [str(e) for e in (encoders or [])]
    slots = threading.BoundedSemaphore(max_inflight) if max_inflight > 0 else nullcontext()
    started = time.time()

    def key_for(request: RetrievalSettings, mode: str) -> RetrieverKey:
        if request.corpus not in allowed_corpora:
            raise HTTPException(404, f"unknown corpus '{request.corpus}'; valid corpora: {', '.join(allowed_corpora)}")
        kinds = _index_kinds()
        if request.index not in kinds:
            raise HTTPException(404, f"unknown index kind '{request.index}'; valid kinds: {', '.join(kinds)}")
        names = _known_encoders(extra_encoders)
        if request.encoder not in names:
            raise HTTPException(404, f"unknown encoder '{request.encoder}'; valid encoders: {', '.join(names)}")
        return RetrieverKey(request.corpus, request.encoder, request.dim, request.index, request.reduce, mode)

    def open_retriever(key: RetrieverKey):
        try:
            return pool.get(key)
        except RagError as exc:
            raise _http_error(exc) from None

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        if torch_threads > 0:
            import torch

            torch.set_num_threads(torch_threads)
        for settings in warm or []:  # open before serving, so the first request is not slow
            key = RetrieverKey(settings.get("corpus", "builtin"), settings.get("encoder", "minilm"), settings.get("dim"),
                               settings.get("index", "flat"), settings.get("reduce", "pca"), settings.get("retriever", "hybrid"))
            await run_in_threadpool(pool.get, key)
        yield

    app = FastAPI(title="rag", version=__version__, lifespan=lifespan,
                  description="Agentic retrieval over FAISS indexes at any embedding width d.")
    app.state.pool = pool

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError):
        return JSONResponse(status_code=422, content={"detail": _one_line(exc.errors()), "errors": _plain(exc.errors())})

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
            raise _http_error(exc) from None

    @app.post("/search", response_model=SearchResponse)
    def search(request: SearchRequest) -> dict:
        """Top-k passages for the question (dense, bm25 or hybrid)."""
        retriever = open_retriever(key_for(request, request.retriever))
        t0 = time.perf_counter()
        try:
            with slots:
                hits = retriever.search(request.question, k=request.k)
        except RagError as exc:
            raise _http_error(exc) from None
        passages = [{"id": h.passage.id, "title": h.passage.title, "source": h.passage.source,
                     "score": float(h.score), "text": h.passage.text} for h in hits]
        return {"question": request.question, "passages": passages,
                "timings": {"total_ms": round((time.perf_counter() - t0) * 1000, 2)}}

    @app.post("/ask")
    def ask(request: AskRequest) -> dict:
        """Run the agent; the same JSON as `rag ask --json`."""
        key = key_for(request, request.retriever)
        retriever = open_retriever(key)
        try:
            from rag.agent import run_agent
        except ImportError as exc:
            raise HTTPException(503, f"the agent is not available in this install ({exc}); use /search") from None
        try:
            with slots:
                return run_agent(request.question, corpus=key.corpus, encoder=key.encoder, dim=key.dim, index=key.index,
                                 reduce=key.reduce, retriever=key.retriever, llm=request.llm,
                                 max_steps=request.max_steps, k=request.k, retriever_obj=retriever)
        except RagError as exc:
            raise _http_error(exc) from None

    return app


def _http_error(exc: RagError) -> HTTPException:
    """Map a library error to an HTTP status: unknown or missing things 404, broken indexes 409, bad values 422."""
    name = type(exc).__name__
    message = str(exc)
    if name == "IndexMissing" or message.startswith("unknown ") or " not found" in message:
        return HTTPException(404, message)
    if name in ("IndexMismatch", "IndexCorrupt"):
        return HTTPException(409, message)
    return HTTPException(422, message)


def _one_line(errors) -> str:
    parts = []
    for error in errors:
        if error.get("type") == "json_invalid":
            parts.append("the request body is not valid JSON; send an object such as {\"question\": \"...\"}")
            continue
        where = ".".join(str(p) for p in error.get("loc", ()) if p != "body")
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "invalid request"


def _plain(errors) -> list[dict]:
    return [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": e.get("type", "")} for e in errors]
