"""Every attack of the security catalogue against a real uvicorn server on 127.0.0.1: nothing expensive because a client asked,
bodies and text checked, no paths leaked, hosts, keys and idle connections checked."""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid

import httpx
import pytest
from conftest import wait_until
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

Q = "How many parameters does an embedding table with vocabulary V and dimension d hold?"
KEY = "k" * 20 + "-secret-for-tests"


def post(url, body, path="/search", **kw):
    return httpx.post(url + path, json=body, timeout=60, **kw)


def test_missing_indexes_are_not_built_on_request(inprocess_server, index_dir):
    url = inprocess_server()
    builds_at_start = httpx.get(url + "/health").json()["builds"]  # the operator's warm-up may build
    t0 = time.perf_counter()
    response = post(url, {"question": Q, "corpus": "hotpotqa"})
    assert response.status_code == 404 and "--build-missing" in response.json()["detail"]
    assert time.perf_counter() - t0 < 10 and not (index_dir / "hotpotqa").exists()
    statuses = {
        post(url, {"question": Q, "dim": d, "index": "hnsw", "retriever": "dense"}).status_code for d in range(40, 60)
    }
    assert statuses == {404}
    health = httpx.get(url + "/health").json()
    assert len(health["loaded"]) == 1 and health["builds"] == builds_at_start
    assert sorted(p.name for p in (index_dir / "builtin").iterdir() if not p.name.startswith(".")) == [
        "minilm-d384-flat"
    ]
    smol = post(url, {"question": Q, "encoder": "smollm2-input-wbm25"})
    assert smol.status_code == 404  # refused before the 1 GB table is loaded


def test_bm25_is_not_built_either_unless_allowed(inprocess_server, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    unique = uuid.uuid4().hex  # new content: no BM25 cache from an earlier run (the cache outlives test runs)
    (folder / "kiwi.md").write_text(f"# Kiwi\n\nThe kiwi is a flightless bird from New Zealand ({unique}).\n")
    url = inprocess_server(corpora=[str(folder)], warm=[])
    response = post(url, {"question": "flightless bird", "corpus": "notes", "retriever": "bm25"})
    assert response.status_code == 404 and "BM25" in response.json()["detail"]
    assert str(tmp_path) not in response.text
    built = inprocess_server(corpora=[str(folder)], warm=[], build_missing=True)
    assert post(built, {"question": "flightless bird", "corpus": "notes", "retriever": "bm25"}).status_code == 200


def test_allowlist_refuses_with_the_allowed_values(inprocess_server):
    url = inprocess_server(allow={"corpus": ["builtin"], "dim": ["128", "384"], "encoder": ["minilm"]})
    assert post(url, {"question": Q}).status_code == 200
    for body, message in [
        ({"corpus": "scifact"}, "allowed corpus values: builtin"),
        ({"dim": 64}, "dim '64' is not served here; allowed dim values: 128, 384"),
        ({"encoder": "smollm2-input-wbm25"}, "allowed encoder values: minilm"),
    ]:
        response = post(url, {"question": Q, **body})
        assert response.status_code == 403 and message in response.json()["detail"], response.text
    config = httpx.get(url + "/config").json()
    assert config["allow"]["corpus"] == ["builtin"] and config["allow"]["llm"] == ["extractive"]
    assert config["build_missing"] is False


@pytest.mark.slow
def test_pool_is_a_bounded_lru(inprocess_server):
    url = inprocess_server(build_missing=True, max_open=2, warm=[])
    for d in (32, 48, 64):
        assert post(url, {"question": Q, "dim": d, "retriever": "dense"}).status_code == 200
    health = httpx.get(url + "/health").json()
    assert [e["dim"] for e in health["loaded"]] == [48, 64] and health["evictions"] == 1
    metrics = httpx.get(url + "/metrics").text
    assert "rag_pool_open_retrievers 2.0" in metrics and "rag_pool_evictions_total 1.0" in metrics
    assert "rag_index_builds_total 3.0" in metrics


@pytest.mark.slow
def test_builds_beyond_the_limit_get_503(inprocess_server):
    url = inprocess_server(build_missing=True, max_builds=1, warm=[])
    pool = _app_pool(url)
    assert pool.builds.acquire(blocking=False)  # a build in flight holds the only slot
    try:
        response = post(url, {"question": Q, "dim": 24, "retriever": "dense"})
        assert response.status_code == 503 and response.headers["retry-after"] == "30"
    finally:
        pool.builds.release()
    assert post(url, {"question": Q, "dim": 24, "retriever": "dense"}).status_code == 200


def _app_pool(url):
    """The pool of the in-process server at url (found through the running uvicorn server's app)."""
    import gc

    import uvicorn

    port = int(url.rsplit(":", 1)[1])
    for obj in gc.get_objects():
        if (
            isinstance(obj, uvicorn.Server)
            and obj.servers
            and any(s.getsockname()[1] == port for srv in obj.servers for s in srv.sockets)
        ):
            return obj.config.app.state.pool
    raise AssertionError("server not found")


def test_big_bodies_are_refused(inprocess_server):
    url = inprocess_server(warm=[])
    big = b'{"question": "' + b"x" * 100_000 + b'"}'
    response = httpx.post(url + "/search", content=big, headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 413 and "65,536-byte limit" in response.json()["detail"]

    def chunks():  # no content-length: the limit is counted as the body streams in
        for _ in range(100):
            yield b"x" * 10_000

    response = httpx.post(url + "/search", content=chunks(), headers={"content-type": "application/json"}, timeout=30)
    assert response.status_code == 413


@pytest.mark.parametrize(
    "body,message",
    [
        (b'{"question": "\\udcff what"}', "lone surrogate"),
        (b'{"question": "caf\xe9"}', "not valid UTF-8"),
        (b'{"question": "x", "corpus": "\\ud800"}', "lone surrogate"),
    ],
)
def test_text_that_is_not_unicode_is_400(inprocess_server, body, message):
    url = inprocess_server(warm=[])
    for path in ("/search", "/ask", "/v1/chat/completions"):
        response = httpx.post(url + path, content=body, headers={"content-type": "application/json"}, timeout=30)
        assert response.status_code == 400 and message in response.json()["detail"], response.text


def test_symlinks_out_of_a_folder_corpus_are_not_served(inprocess_server, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0:the secret line that must never be served\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Kiwi\n\nThe kiwi is a flightless bird.\n")
    os.symlink(outside, folder / "p.txt")
    url = inprocess_server(corpora=[str(folder)], build_missing=True, warm=[])
    response = post(url, {"question": "secret line root", "corpus": "docs", "retriever": "bm25", "k": 5})
    assert response.status_code == 200
    assert all("secret" not in p["text"] and p["source"] != "p.txt" for p in response.json()["passages"])


def test_no_absolute_paths_in_errors_or_listings(inprocess_server, tmp_path, index_dir):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Kiwi\n\nThe kiwi is a flightless bird.\n")
    url = inprocess_server(corpora=[str(folder)])
    for response in (
        post(url, {"question": "kiwi", "corpus": "docs"}),
        httpx.get(url + "/indexes"),
        httpx.get(url + "/health"),
        httpx.get(url + "/config"),
        httpx.get(url + "/v1/models"),
    ):
        assert str(tmp_path) not in response.text and str(index_dir) not in response.text, response.text
    assert "rag index build --corpus docs" in post(url, {"question": "kiwi", "corpus": "docs"}).json()["detail"]


def test_hosts_are_checked(inprocess_server):
    url = inprocess_server(warm=[])
    assert httpx.get(url + "/health", headers={"host": "evil.example"}).status_code == 400  # DNS rebinding
    assert httpx.get(url + "/health", headers={"host": "localhost:8000"}).status_code == 200
    preflight = httpx.options(
        url + "/search", headers={"origin": "http://evil.example", "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in preflight.headers  # CORS off unless configured
    cors = inprocess_server(warm=[], cors_origins=["http://ui.example"])
    allowed = httpx.options(
        cors + "/search", headers={"origin": "http://ui.example", "access-control-request-method": "POST"}
    )
    assert allowed.headers["access-control-allow-origin"] == "http://ui.example"


def test_api_key_is_required_everywhere_but_health(inprocess_server):
    url = inprocess_server(api_key=KEY)
    assert httpx.get(url + "/health").status_code == 200
    for method, path in [
        ("GET", "/indexes"),
        ("GET", "/metrics"),
        ("GET", "/config"),
        ("GET", "/openapi.json"),  # /docs itself loads without the key and asks for it (tests/serve/test_demo_page.py)
        ("POST", "/search"),
        ("POST", "/ask"),
        ("GET", "/v1/models"),
    ]:
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": KEY}):
            response = httpx.request(method, url + path, json={"question": Q}, headers=headers, timeout=30)
            assert response.status_code == 401 and response.headers["www-authenticate"].startswith("Bearer"), path
    good = post(url, {"question": Q}, headers={"authorization": f"Bearer {KEY}"})
    assert good.status_code == 200


def test_idle_and_slow_connections_are_closed(inprocess_server):
    url = inprocess_server(warm=[], header_timeout=0.5, keep_alive=0.5)
    host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
    idle = socket.create_connection((host, port))
    slow = socket.create_connection((host, port))
    closed = []

    def trickle():
        try:
            for ch in b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + b"a" * 200:
                slow.send(bytes([ch]))
                time.sleep(0.05)
        except OSError:
            closed.append("slow")

    thread = threading.Thread(target=trickle)
    thread.start()
    idle.settimeout(10)
    t0 = time.perf_counter()
    assert idle.recv(1024) == b""  # the server closed the connection that sent nothing
    assert time.perf_counter() - t0 < 5
    thread.join(timeout=20)
    wait_until(lambda: closed, 10, "the trickling connection to be closed")
    idle.close()
    slow.close()


def _docker_works() -> bool:
    import shutil
    import subprocess

    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _docker_works(), reason="docker (with a running daemon) is not available here")
def test_docker_image_builds_and_serves(tmp_path):
    import subprocess

    from conftest import REPO

    from rag.bench.server_process import free_port, wait_healthy

    subprocess.run(["make", "docker"], cwd=REPO, check=True, timeout=3600)
    port = free_port()
    name = f"rag-test-{port}"
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--rm",
            "--name",
            name,
            "-p",
            f"127.0.0.1:{port}:8000",
            "-e",
            f"RAG_API_KEY={KEY}",
            "rag:latest",
        ],
        check=True,
        timeout=60,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", None, timeout=300)
        response = post(f"http://127.0.0.1:{port}", {"question": Q}, headers={"authorization": f"Bearer {KEY}"})
        assert response.status_code == 200 and response.json()["passages"]
    finally:
        subprocess.run(["docker", "stop", name], timeout=60)


def test_operator_encoders_are_served_by_name_not_path():
    import json

    from rag.serve.policy import ServePolicy

    policy = ServePolicy(encoders=["lm:/srv/runs/d256", "mine=lm:/srv/runs/d512"])
    assert policy.allowed("encoder")[-2:] == ["lm-d256", "mine"]
    assert policy.served_encoder("lm:/srv/runs/d512") == "mine" and policy.served_encoder("minilm") == "minilm"
    assert "/srv" not in json.dumps(policy.public())
