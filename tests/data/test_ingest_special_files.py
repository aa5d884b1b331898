"""Only regular files are read: a FIFO, a FIFO with a writer that never stops (a device stand-in) and a
socket in a folder corpus are skipped with one line each, and the CLI and the server never block on them."""

from __future__ import annotations

import os
import socket
import threading
import time

import httpx
import pytest
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

from rag.data.corpus import folder_warnings, load_corpus
from rag.data.ingest import Unreadable, read_document


@pytest.fixture
def special_folder(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Flywheels\n\nA flywheel stores rotational energy.\n")
    os.mkfifo(folder / "pipe.md")  # nobody writes: open() and read() block forever
    os.mkfifo(folder / "endless.txt")  # a writer that never stops: a character device stand-in
    stop = threading.Event()

    def endless_writer():
        try:
            fd = os.open(folder / "endless.txt", os.O_WRONLY)  # blocks until a reader opens it (or forever)
        except OSError:
            return
        with os.fdopen(fd, "wb") as f:
            while not stop.is_set():
                try:
                    f.write(b"x" * 65536)
                except OSError:
                    return

    writer = threading.Thread(target=endless_writer, daemon=True)
    writer.start()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.txt"))
    yield folder
    stop.set()
    try:  # release the writer if it still waits for a reader
        os.close(os.open(folder / "endless.txt", os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass
    sock.close()


def test_fifos_devices_and_sockets_are_skipped_with_one_line_each(special_folder):
    t0 = time.perf_counter()
    corpus = load_corpus(str(special_folder))
    assert time.perf_counter() - t0 < 30
    assert {p.source for p in corpus.passages} == {"a.md"}
    lines = folder_warnings(corpus)
    assert sorted(line for line in lines if "not a regular file" in line) == [
        "skipped endless.txt: not a regular file (a FIFO); skipped",
        "skipped pipe.md: not a regular file (a FIFO); skipped",
        "skipped sock.txt: not a regular file (a socket); skipped",
    ]


def test_read_document_refuses_a_fifo_without_blocking(special_folder):
    for name in ("pipe.md", "endless.txt"):
        with pytest.raises(Unreadable, match="not a regular file"):
            read_document(special_folder / name)


def test_corpus_show_does_not_hang(cli, special_folder):
    result = cli(["corpus", "show", special_folder, "-n", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.count("not a regular file") == 3


def test_server_stays_up_on_a_folder_with_fifos(inprocess_server, special_folder):
    url = inprocess_server(warm=[], corpora=[f"notes={special_folder}"], build_missing=True)
    body = {"question": "What does a flywheel store?", "corpus": "notes", "retriever": "bm25"}
    for _ in range(3):
        response = httpx.post(url + "/search", json=body, timeout=120)
        assert response.status_code == 200, response.text
        assert [p["source"] for p in response.json()["passages"]] == ["a.md"]
    assert httpx.get(url + "/health", timeout=10).json()["status"] == "ok"


def test_control_characters_in_file_names_print_escaped(cli, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "evil\nFAKE LINE\x1b[31m.md").write_text("# Evil\n\nFlywheels store energy.\n")
    (folder / "bad\tname.txt").write_bytes(b"\0binary")
    for args in (
        ["corpus", "show", folder, "-n", "3"],
        ["search", "flywheels store energy", "--corpus", folder, "--retriever", "bm25"],
    ):
        result = cli(args)
        assert result.exit_code == 0, result.output
        assert not any(line.startswith("FAKE LINE") for line in result.output.splitlines())
        assert "\x1b" not in result.output
        assert "evil\\nFAKE LINE\\x1b[31m" in result.output.replace("\n", "")
    shown = cli(["corpus", "show", folder, "-n", "1"]).output
    assert "bad\\tname.txt" in shown
