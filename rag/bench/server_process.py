"""A `rag serve` child process on 127.0.0.1: start it, wait until it is healthy, stop it. Used by `rag bench serve`,
the service tests, the demo-page screenshots and `make fuzz`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from rag.config import REPO_DIR


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def start_server_process(
    port: int, log_path: Path, extra_args: list[str] | None = None, env: dict | None = None
) -> subprocess.Popen:
    """Start `rag serve` as a child process on 127.0.0.1:port; its output goes to log_path."""
    repo = REPO_DIR
    cmd = [
        sys.executable,
        str(repo / "cli.py"),
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        *(extra_args or []),
    ]
    log = open(log_path, "wb")
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), child_env.get("PYTHONPATH")]))
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=child_env, start_new_session=True)


def wait_healthy(url: str, proc: subprocess.Popen | None, timeout: float, log_path: Path | None = None) -> dict:
    """Poll url/health until it answers 200; fail early if the server process dies."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:] if log_path and log_path.exists() else ""
            raise RuntimeError(f"server exited with code {proc.returncode} before it was healthy:\n{tail}")
        try:
            response = httpx.get(url + "/health", timeout=2.0)
            if response.status_code == 200:
                return response.json()
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"server at {url} was not healthy within {timeout:.0f} s")


def stop_server_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly on SIGINT
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
