"""`rag serve` over real HTTP: a real uvicorn server (child process) on a free 127.0.0.1 port, real MiniLM + FAISS."""

from __future__ import annotations

import os
import threading

import httpx
import pytest
from conftest import wait_until

from rag.bench.server_process import free_port, start_server_process, stop_server_process, wait_healthy
from rag.data.corpus import load_corpus
from rag.index.spec import IndexSpec

PARAMS_QUESTION = "How many parameters does an embedding table with vocabulary V and dimension d hold?"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `rag serve` process for the module, with its own index dir (warmed: builtin, minilm, flat, hybrid)."""
    root = tmp_path_factory.mktemp("serve")
    index_dir, log = root / "indexes", root / "server.log"
    port = free_port()
    proc = start_server_process(port, log, ["--build-missing"], env={"RAG_INDEX_DIR": str(index_dir)})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout=240, log_path=log)
        yield {"url": url, "index_dir": index_dir, "log": log}
    finally:
        stop_server_process(proc)


@pytest.fixture(scope="module")
def builtin_ids():
    return set(load_corpus("builtin").passage_by_id)


def post(server, path, body, timeout=60):
    return httpx.post(server["url"] + path, json=body, timeout=timeout)


def test_health_docs_and_openapi(server):
    health = httpx.get(server["url"] + "/health").json()
    assert health["status"] == "ok"
    assert {"corpus": "builtin", "encoder": "minilm", "index": "flat", "retriever": "hybrid"}.items() <= health[
        "loaded"
    ][0].items()
    docs = httpx.get(server["url"] + "/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert "cdn" not in docs.text and "https://" not in docs.text  # works offline: assets come from this server
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css"):
        assert httpx.get(server["url"] + "/static/vendor/swagger-ui/" + asset).status_code == 200
    paths = httpx.get(server["url"] + "/openapi.json").json()["paths"]
    assert {
        "/ask",
        "/search",
        "/health",
        "/indexes",
        "/config",
        "/metrics",
        "/v1/models",
        "/v1/chat/completions",
    } <= set(paths)
    ask = paths["/ask"]["post"]["responses"]
    assert ask["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AskResponse"}
    assert "text/event-stream" in ask["200"]["content"]
    assert ask["422"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}


def test_search_returns_real_passages(server, builtin_ids):
    response = post(server, "/search", {"question": PARAMS_QUESTION, "k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["question"] == PARAMS_QUESTION
    passages = body["passages"]
    assert len(passages) == 3
    assert all(set(p) >= {"id", "title", "source", "score", "text"} for p in passages)
    assert {p["id"] for p in passages} <= builtin_ids
    assert [p["score"] for p in passages] == sorted((p["score"] for p in passages), reverse=True)
    assert any(p["source"] == "embedding-parameter-count.md" for p in passages)


@pytest.mark.parametrize("mode", ["dense", "bm25"])
def test_search_other_retrievers(server, builtin_ids, mode):
    passages = post(server, "/search", {"question": PARAMS_QUESTION, "retriever": mode, "k": 4}).json()["passages"]
    assert len(passages) == 4 and {p["id"] for p in passages} <= builtin_ids


def test_ask_extractive_cites_existing_passages(server, builtin_ids):
    question = (
        "What does the embedding dimension control, and how does the parameter count of an embedding table grow with d?"
    )
    response = post(server, "/ask", {"question": question, "llm": "extractive", "max_steps": 3}, timeout=600)
    assert response.status_code == 200, response.text
    result = response.json()
    assert {"question", "answer", "citations", "steps", "timings", "warnings"} <= set(result)
    assert "V·d" in result["answer"]  # the count the corpus states
    assert result["citations"] and {c["id"] for c in result["citations"]} <= builtin_ids
    for citation in result["citations"]:
        assert f"[{citation['n']}]" in result["answer"]


def test_concurrent_first_requests_open_the_retriever_once(server):
    before = httpx.get(server["url"] + "/health").json()["opens"]
    body = {"question": PARAMS_QUESTION, "retriever": "dense", "index": "sq8", "k": 3}  # a key no test used yet
    statuses = []
    threads = [
        threading.Thread(target=lambda: statuses.append(post(server, "/search", body, timeout=120).status_code))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [200] * 8
    health = httpx.get(server["url"] + "/health").json()
    assert health["opens"] == before + 1
    entry = next(e for e in health["loaded"] if e["index"] == "sq8" and e["retriever"] == "dense")
    assert entry["requests"] == 8


def test_indexes_lists_the_built_index(server):
    response = httpx.get(server["url"] + "/indexes")
    body = response.json()
    assert str(server["index_dir"]) not in response.text and '"/' not in response.text  # no absolute paths
    flat = [m for m in body["indexes"] if m["corpus"] == "builtin" and m["kind"] == "flat" and m["encoder"] == "minilm"]
    assert flat and flat[0]["dim"] == 384 and flat[0]["vectors"] == len(load_corpus("builtin").passages)


LONG = "word " * 1601  # 8,005 characters


@pytest.mark.parametrize(
    "path,body,status,message",
    [
        ("/search", {"question": ""}, 422, "question is empty"),
        ("/ask", {"question": "   \n "}, 422, "question is empty"),
        ("/search", {"question": LONG}, 422, "limit is 8,000"),
        ("/ask", {"question": LONG}, 422, "limit is 8,000"),
        ("/search", {}, 422, "question: Field required"),
        ("/search", {"question": "x", "corpus": "no-such-corpus"}, 403, "corpus 'no-such-corpus' is not served here"),
        ("/ask", {"question": "x", "corpus": "/etc"}, 403, "allowed corpus values: builtin, scifact, hotpotqa, squad"),
        ("/search", {"question": "x", "index": "no-such-index"}, 422, "index: Input should be 'flat'"),
        ("/ask", {"question": "x", "index": "annoy"}, 422, "'ivf-flat', 'ivf-pq', 'hnsw', 'sq8'"),
        ("/search", {"question": "x", "encoder": "bert-huge"}, 403, "encoder 'bert-huge' is not served here"),
        (
            "/ask",
            {"question": "x", "encoder": "lm:/tmp/ckpt"},
            403,
            "is not served here; allowed encoder values: minilm",
        ),
        ("/search", {"question": "x", "k": 0}, 422, "k: Input should be greater than or equal to 1"),
        ("/search", {"question": "x", "retriever": "magic"}, 422, "retriever"),
        ("/search", {"question": "x", "dim": 999}, 422, "out of range for encoder minilm"),
        ("/ask", {"question": "x", "max_steps": 0}, 422, "max_steps"),
        ("/ask", {"question": "x", "max_steps": -2}, 422, "max_steps"),
        ("/ask", {"question": "x", "llm": "gpt-17"}, 422, "llm: Input should be 'extractive', 'local' or 'openai'"),
        (
            "/ask",
            {"question": "x", "llm": "local"},
            403,
            "llm 'local' is not served here; allowed llm values: extractive",
        ),
        ("/search", {"question": "x", "k": "5"}, 422, "k: Input should be a valid integer"),
        ("/search", {"question": "x", "k": True}, 422, "k: Input should be a valid integer"),
        ("/search", {"question": "x", "dim": 128.0}, 422, "dim: Input should be a valid integer"),
        ("/search", {"question": "x", "kk": 5}, 422, "kk: unknown field"),
        ("/ask", {"question": ["x"]}, 422, "question: Input should be a valid string"),
    ],
)
def test_bad_requests_get_a_status_and_a_message(server, path, body, status, message):
    response = post(server, path, body)
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str) and message in detail


def test_body_that_is_not_json_is_422(server):
    response = httpx.post(server["url"] + "/search", content=b"{not json", headers={"content-type": "application/json"})
    assert response.status_code == 422 and "not valid JSON" in response.json()["detail"]


def test_rebuild_while_serving_swaps_atomically(server, builtin_ids, monkeypatch):
    """Requests keep running while the index is rebuilt twice (same kind) and another kind is built: no errors,
    every answer comes from a whole index, and the server moves to the newest version."""
    from rag.index.store import build_and_save

    monkeypatch.setenv("RAG_INDEX_DIR", str(server["index_dir"]))
    corpus = load_corpus("builtin")
    link = server["index_dir"] / "builtin" / "minilm-d384-flat"
    before = os.path.realpath(link)
    swaps_before = httpx.get(server["url"] + "/health").json()["swaps"]
    failures, done, stop = [], [], threading.Event()

    def hammer(path: str, body: dict) -> None:
        with httpx.Client(timeout=120) as client:
            while not stop.is_set():
                try:
                    r = client.post(server["url"] + path, json=body)
                except httpx.HTTPError as exc:
                    failures.append(repr(exc))
                    continue
                ok = r.status_code == 200
                ids = {p["id"] for p in r.json().get("passages", r.json().get("citations", []))} if ok else set()
                if not ok or not ids or not ids <= builtin_ids:
                    failures.append(f"{path} {r.status_code} {r.text[:200]}")
                done.append(path)

    threads = [
        threading.Thread(target=hammer, args=("/search", {"question": PARAMS_QUESTION, "k": 5})) for _ in range(2)
    ]
    threads.append(threading.Thread(target=hammer, args=("/ask", {"question": PARAMS_QUESTION, "llm": "extractive"})))
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(done) >= 2, 60, "requests before the first rebuild")
        build_and_save(corpus, IndexSpec("minilm", None, "flat"))  # same kind: a new version behind the same symlink
        seen = len(done)
        wait_until(lambda: len(done) >= seen + 2, 60, "requests across the first flip")
        build_and_save(corpus, IndexSpec("minilm", None, "flat"))
        build_and_save(corpus, IndexSpec("minilm", 64, "hnsw"))  # another kind while serving
        seen = len(done)
        wait_until(lambda: len(done) >= seen + 3, 60, "requests after the last flip")
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)
    assert not failures, failures[:5]
    assert len(done) >= 10
    after = os.path.realpath(link)
    assert after != before
    swaps_during = httpx.get(server["url"] + "/health").json()["swaps"] - swaps_before
    assert swaps_during >= 1  # requests running across the flips moved the cached retriever to a new version
    post(server, "/search", {"question": PARAMS_QUESTION})
    health = httpx.get(server["url"] + "/health").json()
    assert health["swap_failures"] == 0
    flat = next(e for e in health["loaded"] if e["index"] == "flat" and e["retriever"] == "hybrid" and e["dim"] == 384)
    assert flat["version"] == os.path.basename(after)
    hnsw = post(server, "/search", {"question": PARAMS_QUESTION, "index": "hnsw", "dim": 64, "retriever": "dense"})
    assert hnsw.status_code == 200 and {p["id"] for p in hnsw.json()["passages"]} <= builtin_ids
