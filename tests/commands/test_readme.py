"""The README's quick start, run as written: every `rag` line of its command-line and own-folder blocks
through the real CLI on a fresh index folder, and `rag serve` with the curl line and the OpenAI client block against
a real server. The Python blocks run in tests/commands/test_api.py. A new user types these first; none may fail."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def section(title: str) -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split(f"\n### {title}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]


def blocks(title: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(title), flags=re.S)


def rag_lines(title: str) -> list[list[str]]:
    lines = [line for block in blocks(title, "bash") for line in block.splitlines()]
    return [shlex.split(line, comments=True)[1:] for line in lines if line.startswith("rag ")]


def test_the_readme_says_how_to_reach_the_rag_command_before_using_it():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.index("source .venv/bin/activate") < text.index("\nrag ")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}  # run by `make test`
    plan = subprocess.run(
        ["make", "--no-print-directory", "-n", "demo"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    ).stdout
    assert "source .venv/bin/activate" in plan.splitlines()[-1]  # `make demo` ends by saying so


@pytest.mark.slow  # about 30 s: an ivf-pq build, the agent's imports, a folder index
@pytest.mark.parametrize("title", ["Command line", "Your own folder"])
def test_quick_start_commands_run_as_written(cli, title, monkeypatch):
    monkeypatch.chdir(REPO)  # `./corpus` is the repository's built-in corpus folder
    commands = rag_lines(title)
    assert len(commands) >= 3
    for args in commands:
        result = cli(args)
        assert result.exit_code == 0, f"rag {shlex.join(args)}: {result.output}"
        assert not [line for line in result.output.splitlines() if line.startswith(("error:", "warning:"))], (
            result.output
        )


@pytest.mark.slow  # a real `rag serve` child process
def test_quick_start_service_lines_run_as_written(tmp_path, index_dir):
    from rag.bench.server_process import free_port, start_server_process, stop_server_process, wait_healthy

    [serve] = [args for args in rag_lines("HTTP and the OpenAI API") if args[0] == "serve"]
    port, log = free_port(), tmp_path / "serve.log"
    proc = start_server_process(port, log, serve[1:], env={"RAG_INDEX_DIR": str(index_dir)})
    here = lambda text: text.replace("127.0.0.1:8000", f"127.0.0.1:{port}")  # noqa: E731
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, timeout=900, log_path=log)  # start-up makes the model exports
        [curl] = [b for b in blocks("HTTP and the OpenAI API", "bash") if b.startswith("curl")]
        out = subprocess.run(here(curl), shell=True, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and '"passages"' in out.stdout, out.stdout + out.stderr
        [client] = blocks("HTTP and the OpenAI API", "python")
        exec(compile(here(client), "README.md", "exec"), {})
    finally:
        stop_server_process(proc)
