"""Fixtures shared by the tests/test_serve_*.py modules: real uvicorn servers on free 127.0.0.1 ports."""

from __future__ import annotations

import socket
import threading

import pytest


@pytest.fixture
def inprocess_server(index_dir):
    """start(**policy) -> url: a real uvicorn server in a thread (the app built here, so its policy can vary), with the
    service's own HTTP protocol (header timeout). Warmed with the default retriever unless warm=[] is given."""
    import uvicorn

    from rag.serve import create_app
    from rag.serve.guard import protocol_with_timeout
    from rag.serve.policy import DEFAULT_WARM

    servers = []

    def start(header_timeout: float = 10.0, keep_alive: float = 5.0, **options) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        app = create_app(**{"warm": [DEFAULT_WARM], **options})
        config = uvicorn.Config(
            app,
            log_level="warning",
            http=protocol_with_timeout(header_timeout),
            timeout_keep_alive=keep_alive,
            h11_max_incomplete_event_size=16 * 1024,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        servers.append((server, thread))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        for _ in range(1200):
            if server.started:
                return url
            thread.join(0.05)
        raise RuntimeError("in-process server did not start")

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)
