"""Print the issue-23 security figures: adversarial glob match times and the /metrics scrape size after 5,000
requests to random paths (a real uvicorn server on 127.0.0.1). See docs/security.md.

    PYTHONPATH=. python scripts/security_figures.py
"""

from __future__ import annotations

import random
import socket
import string
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace


def glob_times() -> None:
    from rag.data.filters import parse_where

    patterns = {"*? x247 + Z": "*?" * 247 + "Z", "*a x248 + b": "*a" * 248 + "b", "**a x165 + b": "**a" * 165 + "b"}
    texts = ["a" * 400, "a/" * 200, "a" * 399 + "Z"]
    for name, pattern in patterns.items():
        keep = parse_where(("source=" + pattern)[:500])
        t0 = time.perf_counter()
        for text in texts * 100:
            keep(SimpleNamespace(source=text))
        print(f"glob {name:14s} {(time.perf_counter() - t0) / 300 * 1e6:8.1f} us per match (400-character sources)")


def metrics_size(requests: int = 5000, workers: int = 40) -> None:
    import httpx
    import uvicorn

    from rag.serve import create_app
    from rag.serve.guard import protocol_with_timeout

    key = "figures-" + "k" * 20
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(create_app(warm=[], api_key=key), log_level="warning", http=protocol_with_timeout(10))
    )
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    auth = {"authorization": f"Bearer {key}"}

    def fire(worker: int) -> None:
        rng = random.Random(worker)
        with httpx.Client(base_url=url, timeout=30) as client:
            for i in range(requests // workers):
                path = "/" + "".join(rng.choices(string.ascii_letters + "/", k=rng.randint(20, 200)))
                client.request(rng.choice(["GET", "POST", "FOOXX"]), path, headers=auth if i % 2 else {})

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fire, range(workers)))
    scrape = httpx.get(url + "/metrics", headers=auth).content
    print(f"/metrics after {requests:,} requests to random paths and methods: {len(scrape):,} bytes")
    server.should_exit = True


if __name__ == "__main__":
    glob_times()
    metrics_size()
