"""The client side of `rag serve` (`ask --server`, `bench serve`) and the serve options, against real uvicorn servers."""

from __future__ import annotations

import socket

import httpx
import pytest
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)
from typer.testing import CliRunner

from cli import app
from rag.config import RagError
from rag.retrieve import RetrievalSettings
from rag.serve.client import ask_remote, search_remote

runner = CliRunner()


def test_ask_remote_returns_the_agent_json(inprocess_server):
    url = inprocess_server()
    result = ask_remote(url, "How many bytes per parameter does fp16 use?", RetrievalSettings())
    assert "2" in result["answer"] and result["citations"]
    hits = search_remote(url, "rotary position embeddings", RetrievalSettings(k=2))["passages"]
    assert len(hits) == 2 and hits[0]["source"] == "rotary-position-embeddings.md"


def test_ask_remote_bad_question_carries_the_server_message(inprocess_server):
    url = inprocess_server()
    with pytest.raises(RagError, match=r"422.*question is empty"):
        ask_remote(url, " ", RetrievalSettings())
    with pytest.raises(RagError, match=r"403.*corpus 'nope' is not served here; allowed corpus values: builtin"):
        ask_remote(url, "x", RetrievalSettings(corpus="nope"))


def test_ask_remote_unreachable_server_is_a_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here
    with pytest.raises(RagError, match="cannot reach the server .* start it with `rag serve`"):
        ask_remote(f"http://127.0.0.1:{port}", "x", RetrievalSettings(), timeout=5)


def test_missing_index_is_404_when_builds_are_off(inprocess_server):
    url = inprocess_server(build_missing=False)
    response = httpx.post(url + "/search", json={"question": "x", "index": "hnsw", "dim": 32}, timeout=30)
    assert response.status_code == 404
    assert "rag index build --corpus builtin --encoder minilm --dim 32 --index hnsw" in response.json()["detail"]
    bm25 = httpx.post(url + "/search", json={"question": "x", "retriever": "bm25"}, timeout=30)
    assert bm25.status_code == 200  # builtin's BM25 was built by the operator's warm-up


def test_serve_refuses_a_port_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        result = runner.invoke(app, ["serve", "--port", str(busy.getsockname()[1]), "--no-warm"])
    assert result.exit_code == 1
    assert "cannot bind 127.0.0.1" in result.output and "pick another --port" in result.output


def test_bench_serve_against_a_running_server(inprocess_server):
    url = inprocess_server()
    result = runner.invoke(app, ["bench", "serve", "--server", url, "--requests", "4", "--sequential", "2"])
    assert result.exit_code == 0, result.output
    rows = [[cell.strip() for cell in line.split("│")[2:-1]] for line in result.output.splitlines() if "│ /" in line]
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [  # endpoint, mode, requests, errors
        ("/search", "serial", "2", "0"),
        ("/ask", "serial", "2", "0"),
        ("/search", "concurrent", "4", "0"),
        ("/ask", "concurrent", "4", "0"),
    ]
    assert "throughput x" in result.output


def test_bench_serve_reports_errors_and_fails(inprocess_server):
    url = inprocess_server()
    result = runner.invoke(app, ["bench", "serve", "--server", url, "--requests", "2", "--corpus", "nope"])
    assert result.exit_code == 1
    assert "403" in result.output


def test_rag_ask_server_goes_through_http(inprocess_server, cli):
    import json

    url = inprocess_server()
    result = cli(
        [
            "ask",
            "How many parameters does an embedding table with vocabulary V and dimension d hold?",
            "--server",
            url,
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    answer = json.loads(result.output)
    assert "V·d" in answer["answer"] and answer["citations"]
    refused = cli(["ask", "x", "--server", url, "--corpus", "nope"])
    assert refused.exit_code != 0 and "corpus 'nope' is not served here" in refused.output


def test_extra_corpus_folder_named_at_start(inprocess_server, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "kiwi.md").write_text("# Kiwi\n\nThe kiwi is a flightless bird from New Zealand that lays a huge egg.\n")
    (folder / "faiss.md").write_text("# FAISS\n\nFAISS searches dense vectors with flat, IVF and HNSW indexes.\n")
    url = inprocess_server(corpora=[str(folder)], build_missing=True)
    response = httpx.post(url + "/search", json={"question": "flightless bird", "corpus": "notes", "k": 1}, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["passages"][0]["source"] == "kiwi.md"
    assert response.json()["corpus"] == "notes"  # its served name, never the folder's path
    for name in (str(folder), str(tmp_path)):  # only folders named at start are served, and only by name
        other = httpx.post(url + "/search", json={"question": "x", "corpus": name}, timeout=30)
        assert other.status_code == 403 and str(tmp_path) not in other.text


def test_a_corrupt_new_version_keeps_the_old_index_serving(inprocess_server, index_dir):
    """If the symlink flips to a version that fails its checksums, requests keep getting the whole old index."""
    import os
    import shutil

    url = inprocess_server()
    body = {"question": "rotary position embeddings", "k": 2}
    good = httpx.post(url + "/search", json=body, timeout=60).json()["passages"]
    link = index_dir / "builtin" / "minilm-d384-flat"
    bad = link.parent / ".versions" / "minilm-d384-flat-99999999-broken"
    shutil.copytree(os.path.realpath(link), bad)
    data = bytearray((bad / "index.faiss").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / "index.faiss").write_bytes(bytes(data))
    tmp_link = link.parent / ".link-test"
    os.symlink(os.path.relpath(bad, link.parent), tmp_link)
    os.replace(tmp_link, link)
    for _ in range(3):
        response = httpx.post(url + "/search", json=body, timeout=60)
        assert response.status_code == 200 and response.json()["passages"] == good
    health = httpx.get(url + "/health").json()
    assert health["swap_failures"] == 1 and health["swaps"] == 0  # one failed reopen, then a back-off


def test_ask_server_honours_every_retrieval_option(inprocess_server):
    """`rag ask --server` sends every setting: the server's passages equal the local run's for non-default options."""
    import json

    url = inprocess_server(build_missing=True)
    options = ["--retriever", "bm25", "--reduce", "truncate", "--dim", "128", "-k", "7", "--json"]
    question = "How are rotary position embeddings applied to queries and keys?"
    local = runner.invoke(app, ["ask", question, *options])
    remote = runner.invoke(app, ["ask", question, *options, "--server", url])
    assert local.exit_code == 0 and remote.exit_code == 0, (local.output, remote.output)
    local, remote = json.loads(local.stdout), json.loads(remote.stdout)
    retrieved = [s for s in remote["steps"] if s["node"] == "retrieve"]
    assert [r["id"] for r in remote["retrieved"]] == [r["id"] for r in local["retrieved"]]
    assert len(retrieved[0]["hits"]) <= 2 * 7 and remote["citations"] == local["citations"]
    dense = ["--retriever", "dense", "--reduce", "truncate", "--dim", "128", "-k", "7", "--json"]
    local = json.loads(runner.invoke(app, ["search", question, *dense]).stdout)
    remote = search_remote(url, question, RetrievalSettings(retriever="dense", reduce="truncate", dim=128, k=7))
    assert len(remote["passages"]) == 7 and remote["dim"] == 128 and remote["reduce"] == "truncate"
    assert [p["id"] for p in remote["passages"]] == [p["id"] for p in local["passages"]]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--allow", "colour=red"], "unknown field; allowed fields: corpus, encoder, dim"),
        (["--allow", "corpus"], "write FIELD=VALUE"),
        (["--corpus", "/no/such/folder"], "is not a folder"),
    ],
)
def test_serve_refuses_bad_operator_settings(args, message):
    result = runner.invoke(app, ["serve", "--no-warm", *args])
    assert result.exit_code == 2 and message in result.output, result.output


def test_serve_config_file_and_key_file_are_checked(tmp_path):
    config = tmp_path / "serve.toml"
    config.write_text('build_missing = true\nmax_open = 3\ncolour = "red"\n[allow]\ncorpus = ["builtin"]\n')
    result = runner.invoke(app, ["serve", "--no-warm", "--config", str(config)])
    assert result.exit_code == 2 and "unknown settings ['colour']" in result.output
    config.write_text("build_missing = true\n[allow\n")
    assert "cannot read the serve config" in runner.invoke(app, ["serve", "--config", str(config)]).output
    key = tmp_path / "key"
    key.write_text("short\n")
    result = runner.invoke(app, ["serve", "--no-warm", "--api-key-file", str(key)])
    assert result.exit_code == 2 and "shorter than 16 characters" in result.output


def test_config_file_reaches_the_policy(tmp_path):
    from rag.serve.policy import ServePolicy, read_config_file

    config = tmp_path / "serve.toml"
    config.write_text(
        'build_missing = true\nmax_open = 3\n[allow]\ncorpus = ["builtin", "scifact"]\ndim = [128, 384]\n'
    )
    policy = ServePolicy(**read_config_file(config))
    assert policy.build_missing and policy.max_open == 3
    assert policy.allowed("corpus") == ["builtin", "scifact"] and policy.allowed("dim") == ["128", "384"]
