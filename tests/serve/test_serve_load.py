"""Bursts against the server: model builders build once under concurrent first calls, at most max_inflight
requests compute at once and max_queued more wait, past them 503 with Retry-After. The agent is replaced by a
slow stand-in where a test needs requests that stay busy until it lets them go."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from conftest import wait_until
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

BUSY = {"retriever": "bm25"}  # built on request from the shared BM25 cache: no dense index to build first


def test_concurrent_first_calls_build_once():
    from rag.config import built_once

    calls, barrier = [], threading.Barrier(16)

    @built_once()
    def model():
        calls.append(1)
        time.sleep(0.2)  # a slow load: every other caller arrives while it runs
        return object()

    def first_call(results, i):
        barrier.wait()
        results[i] = model()

    results = [None] * 16
    threads = [threading.Thread(target=first_call, args=(results, i)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(calls) == 1 and all(r is results[0] for r in results)
    model.cache_clear()
    assert model() is not results[0] and len(calls) == 2


def test_built_once_keeps_maxsize_values_and_caches_no_failure():
    from rag.config import built_once

    calls = []

    @built_once(maxsize=2)
    def load(name):
        calls.append(name)
        if name == "bad":
            raise ValueError(name)
        return [name]

    a = load("a")
    assert load("a") is a and load(name="b") == ["b"]
    load("c")  # past maxsize: the oldest ('a') is dropped
    assert load("a") is not a
    for _ in range(2):
        with pytest.raises(ValueError):
            load("bad")
    assert calls.count("bad") == 2


def test_every_model_builder_is_built_once():
    from rag.agent.graph import compiled_graph
    from rag.agent.multihop import default_model
    from rag.answer.reader import reader_for
    from rag.answer.sentence_rank import load_model
    from rag.encoders import load_encoder
    from rag.encoders.smollm2 import load_smollm2
    from rag.index.placement import placement
    from rag.screen.normalize import confusables
    from rag.screen.verifier import default_verifier, trunk

    for builder in (
        compiled_graph,
        default_model,
        load_model,
        load_encoder,
        load_smollm2,
        placement,
        confusables,
        reader_for,
    ):
        assert getattr(builder, "built_once", False), builder.__qualname__
    assert default_verifier.built_once and trunk.built_once


def test_max_inflight_is_bounded_by_default():
    from rag.serve.policy import ServePolicy

    policy = ServePolicy()
    assert 2 <= policy.max_inflight <= 32 and policy.max_queued >= 64
    assert ServePolicy(max_inflight=0).max_inflight == 0  # no limit, when the operator says so
    assert policy.public()["max_inflight"] == policy.max_inflight


@pytest.fixture
def slow_agent(monkeypatch):
    """The agent replaced by a stand-in that reports a step every 0.1 s until `release` is set (at most 120 s)."""
    import rag.agent

    state = {"release": threading.Event(), "started": [], "finished": [], "stopped": []}

    def run_agent(question, settings, agent, retriever=None, on_step=None):
        state["started"].append(question)
        try:
            for _ in range(1200):
                if state["release"].wait(0.1):
                    break
                if on_step is not None:
                    on_step({"node": "retrieve", "ms": 100.0, "query": question})
        except Exception:
            state["stopped"].append(question)
            raise
        state["finished"].append(question)
        return {
            "question": question,
            "answer": "done",
            "citations": [],
            "spans": [],
            "steps": [{"node": "answer", "ms": 1.0}],
            "timings": {},
            "warnings": [],
            "mode": "single",
            "sub_questions": [],
            "rounds": 1,
            "retrieved": [],
        }

    monkeypatch.setattr(rag.agent, "run_agent", run_agent)
    yield state
    state["release"].set()


def gauge(url: str, name: str) -> float:
    scrape = httpx.get(url + "/metrics", timeout=60).text
    return float(scrape.split(f"\n{name} ")[1].split()[0])


def test_past_the_slots_and_the_queue_requests_get_503_with_retry_after(inprocess_server, slow_agent):
    url = inprocess_server(warm=[], build_missing=True, max_inflight=1, max_queued=1)
    answers = {}

    def ask(name):
        answers[name] = httpx.post(url + "/ask", json={"question": name, **BUSY}, timeout=300)

    computing = threading.Thread(target=ask, args=("first",))
    computing.start()
    wait_until(lambda: slow_agent["started"], 300, "the first request to compute")
    waiting = threading.Thread(target=ask, args=("second",))
    waiting.start()
    wait_until(lambda: gauge(url, "rag_requests_waiting") == 1, 120, "the second request to wait")
    for headers in ({}, {"accept": "text/event-stream"}):
        full = httpx.post(url + "/ask", json={"question": "third", **BUSY}, headers=headers, timeout=60)
        assert full.status_code == 503 and full.headers["retry-after"].isdigit(), full.text
        assert "retry" in full.json()["detail"]
    assert httpx.get(url + "/health", timeout=60).status_code == 200  # not a slot-taking request
    assert slow_agent["started"] == ["first"]  # the second waits without a thread running its agent
    slow_agent["release"].set()
    computing.join(300)
    waiting.join(300)
    assert answers["first"].status_code == 200 and answers["second"].status_code == 200
    assert slow_agent["finished"] == ["first", "second"]
    assert gauge(url, "rag_requests_computing") == 0 and gauge(url, "rag_requests_waiting") == 0
    assert gauge(url, "rag_requests_refused_total") == 2


def test_slots_come_back_after_deadlines_and_abandoned_streams(inprocess_server, slow_agent):
    url = inprocess_server(warm=[], build_missing=True, max_inflight=1, max_queued=0, request_timeout=1.0)
    late = httpx.post(url + "/ask", json={"question": "late", **BUSY}, timeout=300)
    assert late.status_code == 504
    # the 504'd run still computes (and holds its slot) until its next step sees the deadline
    wait_until(lambda: slow_agent["stopped"] == ["late"], 120, "the late run to stop")
    wait_until(lambda: gauge(url, "rag_requests_computing") == 0, 120, "its slot to come back")
    with httpx.stream(
        "POST", url + "/ask", json={"question": "gone", **BUSY}, headers={"accept": "text/event-stream"}, timeout=300
    ) as response:
        for line in response.iter_lines():
            if line.startswith("event: step"):
                break  # the client goes away mid-run
    wait_until(lambda: gauge(url, "rag_requests_computing") == 0, 120, "the abandoned stream's slot to come back")
    slow_agent["release"].set()
    ok = httpx.post(url + "/ask", json={"question": "after", **BUSY}, timeout=300)
    assert ok.status_code == 200, ok.text


def test_accepted_connections_have_tcp_nodelay():
    import socket

    import uvicorn

    from rag.serve import create_app
    from rag.serve.guard import protocol_with_timeout
    from rag.serve.run import bind

    options = []

    class Recording(protocol_with_timeout(10.0)):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            options.append(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    sock = socket.socket()  # proto 0, as the test servers bind: asyncio alone would not set TCP_NODELAY on it
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(warm=[]), http=Recording, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 120, "the server to start")
        with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=60) as client:
            for _ in range(3):  # keep-alive: one connection
                assert client.get("/health").status_code == 200
        assert options and all(options), options
    finally:
        server.should_exit = True
        thread.join(30)
    listening = bind("127.0.0.1", 0)  # what `rag serve` binds: a TCP socket, which asyncio gives TCP_NODELAY too
    assert listening.proto == socket.IPPROTO_TCP
    listening.close()


def test_an_abandoned_whole_ask_stops_computing(inprocess_server, slow_agent):
    url = inprocess_server(warm=[], build_missing=True)
    for path, body in (
        ("/ask", {"question": "abandoned", **BUSY}),
        ("/v1/chat/completions", {"model": "builtin-bm25", "messages": [{"role": "user", "content": "gone too"}]}),
    ):
        if path.startswith("/v1"):
            models = [m["id"] for m in httpx.get(url + "/v1/models", timeout=60).json()["data"]]
            body["model"] = next(m for m in models if "bm25" in m)
        started = len(slow_agent["started"])
        with pytest.raises(httpx.ReadTimeout):  # the client gives up and closes the connection
            httpx.post(url + path, json=body, timeout=httpx.Timeout(300, read=2.0))
        assert len(slow_agent["started"]) == started + 1
        wait_until(lambda n=started + 1: len(slow_agent["stopped"]) == n, 120, "the abandoned run to stop")
    assert slow_agent["finished"] == []  # both stopped at a step, long before the stand-in's 120 s
    assert gauge(url, "rag_asks_cancelled_total") == 2
    wait_until(lambda: gauge(url, "rag_requests_computing") == 0, 120, "the slots to come back")


def test_health_and_metrics_answer_while_every_worker_thread_is_busy(inprocess_server, slow_agent):
    key = "k" * 20 + "-secret-for-tests"
    auth = {"authorization": f"Bearer {key}"}
    url = inprocess_server(warm=[], build_missing=True, max_inflight=0, api_key=key)  # no slot limit: 45 threads
    threads = [
        threading.Thread(
            target=httpx.post,
            args=(url + "/ask",),
            kwargs={"json": {"question": f"q{i}", **BUSY}, "headers": auth, "timeout": 300},
        )
        for i in range(45)
    ]
    for t in threads:
        t.start()
    wait_until(lambda: len(slow_agent["started"]) >= 40, 300, "the worker threads to fill up")  # anyio's 40
    health = httpx.get(url + "/health", headers=auth, timeout=60)
    assert health.status_code == 200 and "loaded" in health.json()
    assert httpx.get(url + "/metrics", headers=auth, timeout=60).status_code == 200
    assert slow_agent["finished"] == []  # answered while every run was still busy
    slow_agent["release"].set()
    for t in threads:
        t.join(300)
    assert len(slow_agent["finished"]) == 45
