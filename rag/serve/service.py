"""The service's work, shared by the native endpoints and the OpenAI-compatible ones: check a request against the
operator's policy, open its retriever from the bounded pool, search or run the agent (whole, or streamed step by
step), and turn library errors into HTTP errors that name no server path."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import deque
from functools import partial
from typing import AsyncIterator, Awaitable, Callable

import anyio
import anyio.to_thread
from fastapi import HTTPException
from fastapi.concurrency import run_in_threadpool

from rag.agent.settings import AgentSettings
from rag.config import RagError, strip_controls
from rag.data.corpus import safe_corpus_name
from rag.retrieve import RetrievalSettings, Retriever
from rag.serve.metrics import Metrics
from rag.serve.policy import Busy, Forbidden, ServePolicy, hide_paths
from rag.serve.pool import ServePool

log = logging.getLogger("rag.serve")


class Slots:
    """At most `running` works compute at once (0: no limit) and at most `waiting` more wait for a slot, on the
    event loop and holding no thread; past that enter() raises a 503 with Retry-After. A work gives its slot back
    when its thread ends, not when its client stops waiting (a run past the deadline still holds memory)."""

    def __init__(self, running: int, waiting: int):
        self.running, self.waiting = running, waiting
        self.lock = threading.Lock()
        self.active = 0
        self.waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = deque()
        self.refused = 0

    async def enter(self) -> Ticket:
        if not self.running:
            return Ticket(None)
        loop = asyncio.get_running_loop()
        with self.lock:
            if self.active < self.running and not self.waiters:
                self.active += 1
                return Ticket(self)
            if len(self.waiters) >= self.waiting:
                self.refused += 1
                raise HTTPException(
                    503,
                    f"the server is computing {self.running} requests and {self.waiting} more are waiting; "
                    "retry in a few seconds",
                    headers={"Retry-After": str(RETRY_AFTER_S)},
                )
            waiter = (loop, loop.create_future())
            self.waiters.append(waiter)
        try:
            await waiter[1]  # resolved by a leaving work: its slot is handed over, `active` unchanged
        except asyncio.CancelledError:
            with self.lock:
                if waiter in self.waiters:
                    self.waiters.remove(waiter)
                    raise
            if waiter[1].done() and not waiter[1].cancelled():
                self.leave()  # handed over just before the cancel: pass it on
            raise
        return Ticket(self)

    def leave(self) -> None:
        """A slot is free (called from any thread): hand it to the first waiter, else count it free."""
        with self.lock:
            if not self.waiters:
                self.active -= 1
                return
            loop, future = self.waiters.popleft()
        try:
            loop.call_soon_threadsafe(self.hand_over, future)
        except RuntimeError:  # the loop has closed (the server stopped): nobody waits any more
            pass

    def hand_over(self, future: asyncio.Future) -> None:
        if future.cancelled():
            self.leave()
        else:
            future.set_result(None)

    def counts(self) -> tuple[int, int]:
        """(computing, waiting) now."""
        return self.active, len(self.waiters)


class Ticket:
    """One admitted work's slot: run(work) in the worker thread gives it back when the work ends; drop() gives it
    back if the thread never started (the request was cancelled first), and then a late start does nothing."""

    def __init__(self, slots: Slots | None):
        self.slots, self.lock = slots, threading.Lock()
        self.started = self.dropped = False

    def run(self, work: Callable):
        with self.lock:
            if self.dropped:
                raise ClientGone("the request was cancelled before it started")
            self.started = True
        try:
            return work()
        finally:
            if self.slots is not None:
                self.slots.leave()

    def drop(self) -> None:
        with self.lock:
            if self.started or self.dropped:
                return
            self.dropped = True
        if self.slots is not None:
            self.slots.leave()


RETRY_AFTER_S = 5
DISCONNECT_POLL_S = 0.25  # how often a non-streamed /ask checks that its client is still there


class Service:
    def __init__(self, policy: ServePolicy, pool: ServePool | None = None):
        self.policy = policy
        self.pool = pool or ServePool(
            build_missing=policy.build_missing,
            max_open=policy.max_open,
            max_memory_mb=policy.max_memory_mb,
            max_builds=policy.max_builds,
        )
        self.slots = Slots(policy.max_inflight, policy.max_queued)
        self.metrics = Metrics(self.pool, self.slots)

    # ------------------------------------------------------------ requests
    def open(self, settings: RetrievalSettings, llm: str | None = None) -> Retriever:
        """The retriever for a request's settings, or an HTTPException (403 not allowed, 404 not built, ...)."""
        try:
            return self.pool.get(self.policy.check_request(settings, llm))
        except RagError as exc:
            raise self.http_error(exc) from None

    def search(self, question: str, settings: RetrievalSettings) -> dict:
        retriever = self.open(settings)
        try:
            hits = retriever.search(question)
        except RagError as exc:
            raise self.http_error(exc) from None
        return self.public(scrub(retriever.result(question, hits)))

    def agent(self, question: str, retriever: Retriever, agent: AgentSettings) -> Callable:
        """A function on_step -> the `rag ask --json` dict, run in a worker thread."""
        try:
            from rag.agent import run_agent
        except ImportError as exc:
            raise HTTPException(503, f"the agent is not available in this install ({exc}); use /search") from None

        def run(on_step=None) -> dict:
            result = scrub(run_agent(question, retriever.settings, agent, retriever=retriever, on_step=on_step))
            flagged = sum(len(s.get("flagged", [])) for s in result["steps"] if s.get("node") == "answer")
            if flagged:
                self.metrics.injections.inc(flagged)
            return result

        return run

    async def ask(self, run: Callable, disconnected: Callable[[], Awaitable[bool]] | None = None) -> dict:
        """The whole agent run, within the request deadline; past it the client gets 504 and the run stops at the
        agent's next node. With `disconnected` (Request.is_disconnected) the run also stops at its next node once
        the client has gone away (checked every DISCONNECT_POLL_S seconds)."""
        late = threading.Event()

        def on_step(_: dict) -> None:
            if late.is_set():
                raise ClientGone("the request deadline passed or the client went away")

        async def watch() -> None:
            while not late.is_set():
                await asyncio.sleep(DISCONNECT_POLL_S)
                if await disconnected():
                    late.set()
                    self.metrics.asks_cancelled.inc()

        watcher = asyncio.create_task(watch()) if disconnected is not None else None
        try:
            return await self.within_deadline(partial(run, on_step), late)
        except RagError as exc:
            raise self.http_error(exc) from None
        except ClientGone:  # nobody reads this answer; 499 as nginx logs a client that closed its request
            raise HTTPException(499, "the client closed the request before the answer") from None
        finally:
            if watcher is not None:
                watcher.cancel()

    async def search_within_deadline(self, question: str, settings: RetrievalSettings) -> dict:
        return await self.within_deadline(partial(self.search, question, settings))

    async def within_deadline(self, work: Callable, late: threading.Event | None = None):
        """Run work() in a worker thread for at most request_timeout seconds, else HTTP 504. The thread itself
        cannot be killed: it is abandoned, finishes (or stops at its next check of `late`) and its result is dropped."""
        started = anyio.current_time()
        try:
            with anyio.fail_after(self.policy.request_timeout):  # the wait for a slot counts too
                ticket = await self.slots.enter()
                try:
                    result = await anyio.to_thread.run_sync(ticket.run, work, abandon_on_cancel=True)
                finally:
                    ticket.drop()
                if anyio.current_time() - started > self.policy.request_timeout:
                    raise TimeoutError  # done in the same loop turn as the deadline: still past it
                return result
        except TimeoutError:
            if late is not None:
                late.set()
            raise HTTPException(
                504, f"the request took longer than the server's {self.policy.request_timeout:g} s limit"
            ) from None

    async def events(self, run: Callable, ticket: Ticket) -> AsyncIterator[tuple[str, dict]]:
        """('step', step) as each agent node finishes, then ('answer', result) or ('error', {detail}). The ticket
        (from slots.enter(), taken before the response starts) is the run's computing slot."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        gone = threading.Event()  # set when the client goes away: the agent stops at its next node

        def on_step(step: dict) -> None:
            if gone.is_set():
                raise ClientGone("the client closed the stream")
            loop.call_soon_threadsafe(queue.put_nowait, ("step", scrub(step)))

        async def worker():
            try:
                await queue.put(("answer", await run_in_threadpool(ticket.run, partial(run, on_step))))
            except ClientGone:
                self.metrics.streams_cancelled.inc()
            except RagError as exc:
                await queue.put(("error", {"detail": self.http_error(exc).detail}))
            except Exception:
                log.exception("agent run failed")
                await queue.put(("error", {"detail": "the agent failed; see the server log"}))
            finally:
                ticket.drop()
                await queue.put(None)

        task = asyncio.create_task(worker())
        try:
            while (item := await queue.get()) is not None:
                yield item
        finally:
            gone.set()
            if not task.done():
                task.add_done_callback(lambda t: t.exception())

    # ------------------------------------------------------------ what clients see
    def public(self, result: dict) -> dict:
        if "corpus" in result:
            result["corpus"] = self.policy.served_name(result["corpus"])
        if "encoder" in result:
            result["encoder"] = self.policy.served_encoder(result["encoder"])
        return result

    def clean(self, message: str) -> str:
        """A message as clients may see it: a folder corpus's path and its index folder's name (the real folder's
        name plus a hash, rag.data.corpus.safe_corpus_name) written as the served name, other paths hidden."""
        for name, real in self.policy.corpora.items():
            if real != name:
                message = message.replace(real, name).replace(safe_corpus_name(real), name)
        for name, real in self.policy.encoders.items():
            if real != name:
                message = message.replace(real, name)
        return hide_paths(message)

    def http_error(self, exc: RagError) -> HTTPException:
        """Library error -> HTTP: not allowed 403, busy 503, unknown or missing 404, broken index 409, bad values 422."""
        name, message = type(exc).__name__, self.clean(str(exc))
        if isinstance(exc, Forbidden):
            return HTTPException(403, message)
        if isinstance(exc, Busy):
            return HTTPException(503, message, headers={"Retry-After": "30"})
        if name == "IndexMissing" or message.startswith("unknown ") or " not found" in message:
            return HTTPException(404, message)
        if name in ("IndexMismatch", "IndexCorrupt"):
            return HTTPException(409, message)
        return HTTPException(422, message)


def scrub(value):
    """A result with every string stripped of terminal escape sequences and control characters (tab and newline
    kept) as the CLI prints them (rag.config.strip_controls): a document cannot drive a client's terminal. A span's
    start and end count characters of the passage as stored, before this stripping."""
    if isinstance(value, str):
        return strip_controls(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


class ClientGone(Exception):
    """Raised in the agent's thread at its next node after an SSE client went away: the run stops there."""


def sse(event: str, data) -> str:
    """One server-sent event: `event: <name>` and one `data:` line of JSON."""
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
