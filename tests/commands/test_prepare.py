"""`rag prepare`: the query path's model exports made before the first question, one line each, quietly."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.agent.prepare import QueryModel, missing_models, prepare_query_models
from rag.config import cache_dir

REPO = Path(__file__).resolve().parents[2]
QUESTION = "What does the embedding dimension control?"


def test_each_missing_model_is_made_once_in_a_child_process_with_one_line(tmp_path):
    target = tmp_path / "model.onnx"
    chatty = (
        "import sys, warnings; warnings.warn('tracer chatter'); print('Converting tensors', file=sys.stderr); "
        f"open({str(target)!r}, 'w').write('weights')"
    )
    model = QueryModel("a model", lambda: target, chatty)
    said = []
    result = prepare_query_models(said.append, [model])
    assert target.read_text() == "weights" and said == ["preparing a model (once per cache)"]
    assert [m["model"] for m in result["made"]] == ["a model"] and not result["failed"]
    assert missing_models([model]) == [] and prepare_query_models(said.append, [model])["made"] == []
    assert len(said) == 1  # made: nothing to say the second time
    broken = QueryModel("a broken model", lambda: tmp_path / "never.onnx", "raise SystemExit('no weights here')")
    result = prepare_query_models(said.append, [broken, QueryModel("not shipped", lambda: None, "raise SystemExit")])
    assert result["failed"] == [{"model": "a broken model", "why": "no weights here"}] and len(said) == 2


def rag(*args, timeout=1800):
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "cli.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def cached_files() -> set[str]:
    """The exported models: what a first question used to make."""
    folders = [cache_dir() / "onnx"]
    return {str(p.relative_to(cache_dir())) for folder in folders for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_after_a_build_the_first_ask_makes_nothing_and_prints_no_library_output(index_dir):
    """The first `rag ask` used to export three models, and the screen verifier where a passage was flagged (GGUF
    dequantization, torch's TracerWarnings), and check the index's probe set inside the question; `rag index build`
    makes what the cache lacks (one line each, as `rag prepare` does), so the first ask reads cached files only."""
    built = rag("index", "build", "--corpus", "builtin", "--no-screen", "--json")  # exports are the point here
    assert built.returncode == 0, built.stderr[-2000:]
    prepared = json.loads(built.stdout)["prepared"]
    assert prepared["failed"] == [] and prepared["probes_checked"] <= 1, prepared
    assert missing_models() == []
    before = cached_files()
    asked = rag("ask", QUESTION)
    assert asked.returncode == 0 and "[1]" in asked.stdout, asked.stderr[-2000:]
    for noise in ("GGUF", "TracerWarning", "Warning", "WARNING", "de-quantizing"):
        assert noise not in asked.stderr, asked.stderr[-2000:]
    assert cached_files() == before  # nothing exported during the question
    again = rag("prepare")
    assert again.returncode == 0 and "nothing to make" in again.stdout and not again.stderr


LOAD_IN_BACKGROUND = """
import sys
from rag.agent.prepare import load_answer_models
from rag.answer import reader
from rag.encoders import onnx

thread = load_answer_models()
if thread is None:
    print("none")
    sys.exit(0)
thread.join(timeout=600)
def built_twice(*args, **kwargs):
    raise SystemExit("built again")
reader.Reader.__init__ = built_twice  # the answer step must get the thread's reader, not build one
onnx.OnnxEncoder.__init__ = built_twice
from rag.encoders import minilm_query_encoder
assert reader.default_reader() is not None and minilm_query_encoder() is not None
print("shared", "langgraph" in sys.modules)
"""


def test_the_answer_models_load_in_a_background_thread_and_the_answer_step_gets_them(tmp_path):
    prepare_query_models(lambda _line: None)  # the model files the thread loads
    done = subprocess.run(
        [sys.executable, "-c", LOAD_IN_BACKGROUND], cwd=REPO, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["shared", "False"]  # and the thread imported no LangGraph
    empty = {**os.environ, "RAG_CACHE_DIR": str(tmp_path)}  # model files still to be made: nothing starts
    done = subprocess.run(
        [sys.executable, "-c", LOAD_IN_BACKGROUND], cwd=REPO, env=empty, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0 and done.stdout.split() == ["none"], done.stderr[-2000:]
