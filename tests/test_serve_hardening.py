"""Issue 23 against a real uvicorn server on 127.0.0.1: bounded metrics labels, a key-less /health that says only
'ok', slow bodies timed out, request fields that start work allowlisted, bounded error bodies."""

from __future__ import annotations

import random
import string
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
