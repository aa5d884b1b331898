"""Hardening checks against a real uvicorn server on 127.0.0.1: bounded metrics labels, a key-less /health that says only
'ok', slow bodies timed out, request fields that start work allowlisted, bounded error bodies."""

from __future__ import annotations

import random
import socket
import string
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

KEY = "k" * 20 + "-secret-for-tests"
AUTH = {"authorization": f"Bearer {KEY}"}


def test_metrics_labels_stay_bounded_under_random_paths(inprocess_server):
    url = inprocess_server(warm=[], api_key=KEY)
    methods = ["GET", "POST", "DELETE", "FOO" + "X" * 20]

    def fire(worker: int) -> None:  # 40 clients at once: each request mostly waits on the network
        rng = random.Random(worker)
        with httpx.Client(base_url=url, timeout=30) as client:
            for i in range(125):
                path = "/" + "".join(rng.choices(string.ascii_letters + "/", k=rng.randint(20, 200)))
                headers = AUTH if i % 2 else {}  # refused before routing (401) and routed (404) alike
                client.request(rng.choice(methods), path, headers=headers)

    with ThreadPoolExecutor(40) as workers:
        list(workers.map(fire, range(40)))  # 5,000 requests
    with httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/metrics").status_code == 401  # the scrape needs the key
        scrape = client.get("/metrics", headers=AUTH).text
    assert len(scrape.encode()) < 100_000
    paths = {line.split('path="')[1].split('"')[0] for line in scrape.splitlines() if 'path="' in line}
    assert "unmatched" in paths and paths <= {"unmatched", "/metrics", "/"}, paths  # "//x" is sent as host x, path /
    assert 'method="other"' in scrape


def test_health_without_the_key_says_only_ok_and_the_version(inprocess_server):
    url = inprocess_server(warm=[], api_key=KEY)
    anonymous = httpx.get(url + "/health").json()
    assert set(anonymous) == {"status", "version"} and anonymous["status"] == "ok"
    full = httpx.get(url + "/health", headers=AUTH).json()
    assert "loaded" in full and "uptime_s" in full


def test_slow_and_silent_bodies_are_timed_out(inprocess_server):
    url = inprocess_server(warm=[], body_timeout=1.0)
    host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
    head = (
        b"POST /search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
    )
    conns = [socket.create_connection((host, port)) for _ in range(10)]
    for i, conn in enumerate(conns):
        conn.sendall(head + (b"{" if i % 2 else b""))  # half trickle, half send nothing after the head
        conn.settimeout(15)
    t0 = time.perf_counter()
    for _ in range(3):  # a byte a second from the tricklers
        for conn in conns[1::2]:
            try:
                conn.send(b" ")
            except OSError:
                pass
        time.sleep(1)
    answers = []
    for conn in conns:
        data = b""
        while chunk := conn.recv(4096):  # the server answers 408 and closes the connection
            data += chunk
        answers.append(data)
        conn.close()
    assert time.perf_counter() - t0 < 15
    assert all(a.startswith(b"HTTP/1.1 408") for a in answers), answers[:2]
    assert httpx.get(url + "/health", timeout=10).status_code == 200


def test_config_values_of_the_wrong_type_stop_the_server_naming_the_key(cli, tmp_path):
    bad = {
        "build_missing": '"false"',
        "max_body": '"100"',
        "max_open": "1.5",
        "max_memory_mb": "true",
        "max_builds": "0",
        "max_inflight": "-1",
        "header_timeout": '"10"',
        "body_timeout": "0",
        "keep_alive": "[1]",
        "torch_threads": '"2"',
        "allowed_hosts": '"localhost"',
        "cors_origins": '"https://x"',
        "corpora": '"notes"',
        "encoders": "3",
        "allow": '"corpus"',
        "not_a_setting": "1",
    }
    for key, value in bad.items():
        config = tmp_path / f"{key}.toml"
        config.write_text(f"{key} = {value}\n")
        result = cli(["serve", "--config", config, "--port", "0", "--no-warm"])
        assert result.exit_code == 2, (key, result.output)
        message = result.output.replace("\n", "")  # one message (rich wraps it at the test console's width)
        assert result.output.count("error:") == 1 and (f"{key}:" in message or f"'{key}'" in message), (key, message)
    both = tmp_path / "both.toml"  # header_timeout in the file once clashed with the flag ("multiple values")
    both.write_text('header_timeout = 3\nkeep_alive = 2\ntorch_threads = 2\nmax_body = "x"\n')
    result = cli(["serve", "--config", both, "--port", "0", "--no-warm"])
    assert "multiple values" not in result.output and "max_body:" in result.output.replace("\n", "")
    big = tmp_path / "big.toml"
    big.write_text("max_body = 1e400\n")
    assert "max_body" in cli(["serve", "--config", big, "--port", "0", "--no-warm"]).output


def test_every_policy_key_is_in_the_typed_model():
    from dataclasses import fields

    from rag.serve.policy import ServePolicy, ServeSettings

    assert {f.name for f in fields(ServePolicy)} == set(ServeSettings.model_fields)


def test_config_file_sets_timeouts_without_clashing_with_the_flags(tmp_path):
    from rag.serve.policy import ServePolicy, read_config_file

    config = tmp_path / "serve.toml"
    config.write_text("header_timeout = 3\nbody_timeout = 4.5\nmax_body = 2048\n")
    policy = ServePolicy(**read_config_file(config))
    assert (policy.header_timeout, policy.body_timeout, policy.max_body) == (3, 4.5, 2048)


def test_backend_is_an_allowlisted_field(inprocess_server):
    url = inprocess_server(warm=[])
    for backend in ("onnx", "torch"):
        response = httpx.post(url + "/search", json={"question": "flywheel", "backend": backend}, timeout=60)
        assert response.status_code == 403 and "allowed backend values: onnx-int8" in response.json()["detail"]
    assert "backend" in httpx.get(url + "/config").json()["allow"]


def test_abandoned_streams_stop_the_agent_and_free_their_threads(inprocess_server):
    import threading

    url = inprocess_server()  # warmed: builtin, minilm, flat, hybrid
    body = {
        "question": "How many parameters does an embedding table with vocabulary V and dimension d hold?",
        "max_steps": 8,
    }
    stream = {"accept": "text/event-stream"}
    httpx.post(url + "/ask", json=body, headers=stream, timeout=600)  # one whole run: the threads it starts stay
    threads = threading.active_count()
    for _ in range(5):
        with httpx.stream("POST", url + "/ask", json=body, headers=stream, timeout=600) as response:
            for line in response.iter_lines():
                if line.startswith("event: step"):
                    break  # the client goes away after the first step
    deadline = time.time() + 30
    while time.time() < deadline:
        scrape = httpx.get(url + "/metrics").text
        cancelled = float(scrape.split("\nrag_streams_cancelled_total ")[1].split()[0])
        if cancelled >= 1 and threading.active_count() <= threads:
            break
        time.sleep(0.2)
    assert cancelled >= 1, "no streamed run was stopped"
    assert threading.active_count() <= threads
    assert httpx.post(url + "/search", json={"question": body["question"]}, timeout=60).status_code == 200


def test_deep_json_is_400_and_error_bodies_are_bounded(inprocess_server):
    url = inprocess_server(warm=[])
    for deep in ('{"question": ' + "[" * 1000 + "]" * 1000 + "}", '{"question": "x", "k": ' + "[" * 50000):
        response = httpx.post(url + "/search", content=deep, headers={"content-type": "application/json"})
        assert response.status_code == 400 and "nested" in response.json()["detail"], response.text[:200]
    many = "{" + ",".join(f'"{i:x}":1' for i in range(7000)) + ', "question": "x"}'
    assert len(many) < 64 * 1024
    response = httpx.post(url + "/search", content=many, headers={"content-type": "application/json"})
    assert response.status_code == 422 and len(response.content) < 8192
    assert "more problems" in response.json()["detail"]


def test_qrels_scores_are_range_checked(tmp_path):
    import pytest

    from rag.config import RagError
    from rag.data.files import load_qrels_file

    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\td1\t1\nq1\td2\t99999999999999999999999\n")
    with pytest.warns(Warning, match="1 malformed line.*line 2.*-1000 to 1000"):
        assert load_qrels_file(qrels) == {"q1": {"d1": 1}}
    qrels.write_text("q1\td2\t4294967296\n")
    with pytest.raises(RagError, match="malformed"):
        load_qrels_file(qrels)


def test_repeated_404s_for_an_unbuilt_bm25_cost_nothing(inprocess_server, tmp_path):
    """After the first 404, repeats are answered from memory: with the folder gone, they still say "not built"
    (a request that read the corpus again would fail on the missing folder instead)."""
    import shutil

    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(400):
        (folder / f"d{i:03d}.md").write_text(f"# Doc {i}\n\n" + f"Paragraph {i} about flywheels and gears. " * 40)
    url = inprocess_server(warm=[], corpora=[f"big={folder}"])
    body = {"question": "flywheels", "corpus": "big", "retriever": "bm25"}
    with httpx.Client(base_url=url, timeout=60) as client:
        first = client.post("/search", json=body)
        assert first.status_code == 404 and "not built" in first.json()["detail"]
        shutil.rmtree(folder)
        for _ in range(10):
            again = client.post("/search", json=body)
            assert again.status_code == 404 and again.json()["detail"] == first.json()["detail"]


def test_python_callers_may_allow_dims_as_numbers_but_not_booleans():
    import pytest

    from rag.config import RagError
    from rag.serve.policy import ServePolicy

    assert ServePolicy(allow={"dim": [128, 384]}).allowed("dim") == ["128", "384"]
    with pytest.raises(RagError, match="allow.dim"):
        ServePolicy(allow={"dim": [True]})


def test_work_past_the_request_deadline_gets_504(inprocess_server):
    url = inprocess_server(request_timeout=0.001)  # warmed: the deadline covers the computing, not the opening
    question = {"question": "What does the embedding dimension control?"}
    for path in ("/search", "/ask"):
        response = httpx.post(url + path, json=question, timeout=60)
        assert response.status_code == 504 and "longer than" in response.json()["detail"], response.text
    assert httpx.get(url + "/health", timeout=10).status_code == 200
