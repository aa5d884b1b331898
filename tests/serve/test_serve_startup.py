"""`rag serve` refuses a bad setting before it listens, with one line naming the key; risky but allowed settings
start with a warning. Nothing here starts a server: rag.serve.run.serve_on is replaced, so a setting that passes is
recorded."""

from __future__ import annotations

import pytest
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)

KEY = "k" * 20 + "-secret-for-tests"


@pytest.fixture
def serve(cli, monkeypatch):
    """serve(*args) -> (exit code, one-line output, policy or None): the CLI up to the point where it would listen."""
    import rag.serve.run as run

    started = []
    monkeypatch.setattr(run, "serve_on", lambda policy, host, port, log_level, listening: started.append(policy))
    monkeypatch.delenv("RAG_API_KEY", raising=False)
    monkeypatch.delenv("RAG_INDEX_KEY", raising=False)

    def run(*args):
        result = cli(["serve", "--no-warm", "--port", "0", *args])
        return result.exit_code, result.output.replace("\n", ""), (started.pop() if started else None)

    return run


def refused(outcome, *words):
    code, output, policy = outcome
    assert code == 2 and policy is None, output
    assert output.count("error:") == 1, output
    for word in words:
        assert word in output, (word, output)


def test_a_missing_corpus_folder_is_refused(serve, tmp_path):
    refused(serve("--corpus", str(tmp_path / "nope")), "nope", "not a folder")
    config = tmp_path / "serve.toml"
    config.write_text(f'corpora = {{notes = "{tmp_path / "gone"}"}}\n')
    refused(serve("--config", config), "corpora.notes", "not a folder")


def test_an_encoder_that_is_not_a_checkpoint_is_refused(serve, tmp_path):
    refused(serve("--encoder", "lm:/etc"), "encoders.lm-etc", "not an LM checkpoint")
    refused(serve("--encoder", "mine=lm:" + str(tmp_path)), "encoders.mine", "not an LM checkpoint")
    refused(serve("--encoder", "nosuch"), "encoders.nosuch", "unknown encoder")


def test_allow_values_that_serve_nothing_or_are_not_values_are_refused(serve, tmp_path):
    refused(serve("--allow", "dim=abc"), "allow.dim", "'abc'")
    refused(serve("--allow", "dim=0"), "allow.dim")
    refused(serve("--allow", "retriever=nosuch"), "allow.retriever", "'nosuch'")
    config = tmp_path / "serve.toml"
    for line in ("retriever = []", "dim = []", 'dim = ["abc"]', "corpus = []", 'index = ["flat", "nosuch"]'):
        config.write_text(f"[allow]\n{line}\n")
        refused(serve("--config", config), "allow." + line.split()[0])
    config.write_text('[allow]\nretriever = ["bm25", "hybrid"]\ndim = [128, 384]\n')
    code, output, policy = serve("--config", config)
    assert code == 0 and policy.allowed("dim") == ["128", "384"], output


def test_a_short_index_key_and_unusable_folders_are_refused(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_INDEX_KEY", "short")
    refused(serve(), "RAG_INDEX_KEY")
    monkeypatch.delenv("RAG_INDEX_KEY")
    afile = tmp_path / "afile"
    afile.write_text("x")
    for variable in ("RAG_INDEX_DIR", "RAG_CACHE_DIR"):
        with monkeypatch.context() as env:
            env.setenv(variable, str(afile))
            refused(serve(), variable, "not a folder")
        with monkeypatch.context() as env:
            env.setenv(variable, str(afile / "below"))  # below a file: cannot be created
            refused(serve(), variable, "cannot create")


def test_api_keys_that_would_turn_auth_off_or_never_match_are_refused(serve, tmp_path, monkeypatch):
    key = tmp_path / "key"
    key.write_text(KEY + "\nsecond-line-of-the-file\n")
    refused(serve("--api-key-file", key), "--api-key-file", "2 lines", "one line")
    key.write_text("   \n\n")
    refused(serve("--api-key-file", key), "--api-key-file", "empty")
    key.write_bytes(b"\xff\xfe" + KEY.encode())
    refused(serve("--api-key-file", key), "not UTF-8")
    key.write_text(KEY + "\n")  # one line and its newline: the key
    code, output, policy = serve("--api-key-file", key)
    assert code == 0 and policy.api_key == KEY, output
    for blank in ("", "   ", "\t\n"):
        monkeypatch.setenv("RAG_API_KEY", blank)
        refused(serve(), "RAG_API_KEY", "authentication off")
    monkeypatch.setenv("RAG_API_KEY", f"{KEY}\n{KEY}")
    refused(serve(), "RAG_API_KEY", "more than one line")
    monkeypatch.setenv("RAG_API_KEY", f"  {KEY}  ")
    code, output, policy = serve()
    assert code == 0 and policy.api_key == KEY, output


def test_any_host_and_any_origin_without_a_key_starts_with_a_warning(serve, monkeypatch):
    code, output, policy = serve("--allowed-host", "*", "--cors-origin", "*")
    assert code == 0 and policy is not None
    assert "warning:" in output and "CORS origin '*' without an API key" in output, output
    monkeypatch.setenv("RAG_API_KEY", KEY)
    code, output, _ = serve("--allowed-host", "*", "--cors-origin", "*")
    assert code == 0 and "warning:" not in output, output
    monkeypatch.delenv("RAG_API_KEY")
    code, output, _ = serve("--allowed-host", "*")
    assert code == 0 and "warning:" not in output, output


def test_a_config_file_that_is_not_utf8_is_named(serve, tmp_path):
    config = tmp_path / "latin1.toml"
    config.write_bytes("# caf\xe9\nmax_open = 3\n".encode("latin-1"))
    refused(serve("--config", config), str(config), "not UTF-8")


def test_an_unexpected_failure_is_a_json_500_naming_no_path(inprocess_server, tmp_path, monkeypatch):
    import httpx

    url = inprocess_server(warm=[])
    afile = tmp_path / "cache-is-a-file"
    afile.write_text("x")
    monkeypatch.setenv("RAG_CACHE_DIR", str(afile))  # after the start check: every cache read now fails
    response = httpx.post(url + "/search", json={"question": "flywheel", "retriever": "bm25"}, timeout=120)
    assert response.status_code == 500 and response.headers["content-type"] == "application/json"
    assert "server log" in response.json()["detail"] and str(tmp_path) not in response.text


def test_missing_model_exports_run_in_a_child_process_before_serving(tmp_path):
    import os

    from rag.serve.prepare import Export, prepare_models, verifier_target

    target = tmp_path / "model.onnx"
    code = f"import os, pathlib; pathlib.Path({str(target)!r}).write_text(str(os.getpid()))"
    said, loads = [], []
    model = Export("a model", lambda: target, code, lambda: loads.append(target.read_text()))
    assert prepare_models(said.append, [model]) == []
    assert target.read_text() != str(os.getpid()) and len(said) == 1  # written by another process
    assert loads == [target.read_text()]  # then loaded here
    assert prepare_models(said.append, [model]) == [] and len(said) == 1 and len(loads) == 2  # exported once

    def unloadable():
        raise MemoryError("no room")

    assert prepare_models(said.append, [Export("a big model", lambda: target, code, unloadable)]) == ["a big model"]
    assert "warning: loading a big model failed" in said[-1] and "no room" in said[-1]
    broken = Export("a broken model", lambda: tmp_path / "never.onnx", "raise SystemExit('no weights here')")
    assert prepare_models(said.append, [broken]) == ["a broken model"]
    assert "warning:" in said[-1] and "no weights here" in said[-1] and "first request" in said[-1]
    verifier = verifier_target()
    assert verifier is None or ("screen-verifier" in str(verifier) and verifier.name == "model.onnx")


def test_rag_serve_prepares_models_only_with_its_warm_up(cli, monkeypatch):
    import rag.serve.prepare as prepare
    import rag.serve.run as run

    calls = []
    monkeypatch.setattr(run, "serve_on", lambda *args: None)
    monkeypatch.setattr(prepare, "prepare_models", lambda say: calls.append(say))
    monkeypatch.delenv("RAG_API_KEY", raising=False)
    assert cli(["serve", "--port", "0"]).exit_code == 0 and len(calls) == 1
    assert cli(["serve", "--port", "0", "--no-warm"]).exit_code == 0 and len(calls) == 1


def test_create_app_checks_the_same_before_serving(tmp_path):
    from rag.config import RagError
    from rag.serve import create_app

    with pytest.raises(RagError, match="corpora.notes: .* is not a folder"):
        create_app(warm=[], corpora={"notes": str(tmp_path / "gone")})
    with pytest.raises(RagError, match="encoders.lm-etc: .*not an LM checkpoint"):
        create_app(warm=[], encoders=["lm:/etc"])
