"""Every model file a question can need, made before the first question: `rag prepare`, and `rag index build`
after it builds (unless --no-prepare).

The query path reads ONNX files exported into RAG_CACHE_DIR/onnx from the packaged weights: MiniLM's int8 query
encoder, the span reader, the injection classifier (int8) and the screen verifier (SmolLM2's first layers, whose
export first dequantizes the packaged GGUF). Each is made on first use when missing, which put torch, its tracer's
warnings, the GGUF progress bar and up to two minutes into a user's first question. `prepare_query_models` makes
each missing one here instead, in a child process whose library output is kept off the terminal, and says one line
per model. A model that fails is said in one line and left to the first question that needs it, as before. It
then checks each built index's probe set against the default query backend, the other once-per-cache step of a
first question.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag.config import REPO_DIR

EXPORT_TIMEOUT_S = 1800


@dataclass(frozen=True)
class QueryModel:
    name: str
    target: Callable[[], Path | None]  # the file it makes (None: not shipped here, nothing to make)
    code: str  # Python that makes it, run in a child process


def minilm_int8() -> Path:
    from rag.encoders.onnx import model_file

    return model_file("onnx-int8")


def reader_file() -> Path | None:
    from rag.answer.reader import WEIGHTS, reader_onnx_file

    return reader_onnx_file() if WEIGHTS.exists() else None


def classifier_file() -> Path | None:
    from rag.models.onnx_sessions import onnx_file
    from rag.screen.classifier import INT8, RETRAIN, WEIGHTS

    if not WEIGHTS.exists():
        return None
    path = onnx_file("screen", WEIGHTS, RETRAIN)
    return path.with_name("model.int8.onnx") if INT8 else path


def verifier_file() -> Path | None:
    from rag.models.onnx_sessions import onnx_file
    from rag.screen.verifier import RETRAIN, WEIGHTS, WEIGHTS_INFO

    return onnx_file("screen-verifier", WEIGHTS, RETRAIN) if WEIGHTS.exists() and WEIGHTS_INFO.exists() else None


QUERY_MODELS = (
    QueryModel(
        "MiniLM's int8 query encoder", minilm_int8, "from rag.encoders.onnx import ensure_model as m; m('onnx-int8')"
    ),
    QueryModel("the span reader", reader_file, "from rag.answer.reader import load_session as m; m()"),
    QueryModel("the injection classifier", classifier_file, "from rag.screen.classifier import Classifier as m; m()"),
    QueryModel(
        "the screen verifier (SmolLM2's first layers; dequantizes the packaged GGUF)",
        verifier_file,
        "from rag.screen.verifier import trunk as m; m()",
    ),
)


ANSWER_MODELS = QUERY_MODELS[:2]  # MiniLM's int8 query encoder and the span reader: the files load_answer_models reads


def missing_models(models=QUERY_MODELS) -> list[QueryModel]:
    """The models whose file is not in the cache yet (a file that fails its sha256 is made again on first use)."""
    return [m for m in models if (target := m.target()) is not None and not target.exists()]


def check_index_probes(manifests: list[dict] | None = None) -> int:
    """Each built index (or each of `manifests`) whose default query backend is not the one that built it (int8
    queries, fp32 documents) checks its probe set once per cache (rag.encoders.probe); here rather than on its first
    question. The number of indexes checked; one that is refused is left to the question that uses it, which says
    what to do."""
    from rag.config import RagError
    from rag.encoders import check_backend
    from rag.encoders.probe import accept_backend
    from rag.index.store import list_indexes

    checked = 0
    for manifest in list_indexes() if manifests is None else manifests:
        try:
            folder, encoder = Path(manifest["path"]).resolve(), manifest["encoder"]
            backend = check_backend(encoder, None, queries=True)
            checked += accept_backend(folder, manifest, encoder, backend, "rebuild it") is not None
        except RagError:
            continue
    return checked


def export_in_child(code: str, target: Callable[[], Path]) -> tuple[bool, str]:
    """Run `code` in a child Python (the checkout on its path, its output kept off the terminal); (whether it ended
    well and made target(), the last line of its error output or why it could not run)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_DIR), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=EXPORT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return done.returncode == 0 and target().exists(), why


def prepare_query_models(say: Callable[[str], None], models=QUERY_MODELS, indexes: list[dict] | None = None) -> dict:
    """Make each missing model in a child process, one line each, then check the built indexes' probe sets (those
    of `indexes`, manifests, when given: `rag index build` checks the one it built);
    {"made": [...], "failed": [...], "probes_checked": n, "seconds": s}."""
    made, failed, start = [], [], time.perf_counter()
    for model in missing_models(models):
        began = time.perf_counter()
        say(f"preparing {model.name} (once per cache)")
        ok, why = export_in_child(model.code, model.target)
        if ok:
            made.append({"model": model.name, "seconds": round(time.perf_counter() - began, 1)})
        else:
            failed.append({"model": model.name, "why": why[:200]})
    probes = check_index_probes(indexes)
    return {"made": made, "failed": failed, "probes_checked": probes, "seconds": round(time.perf_counter() - start, 1)}


def load_answer_models() -> threading.Thread | None:
    """Start loading the answer step's models (the span reader's and the MiniLM query encoder's ONNX Runtime
    sessions, the answerability weights) in a daemon thread, so that ONNX Runtime builds its sessions while the
    caller imports LangGraph (which holds the interpreter; session building does not). Each model is shared through
    its built_once cache: a later call gets it or waits for this build. Nothing starts when a model file has to be
    made first (that stays with the first question, which says so); an error here is left to that later call,
    which raises it where the user sees it. Returns the thread, or None."""
    if missing_models(ANSWER_MODELS):
        return None

    def load() -> None:
        try:
            from rag.answer.abstain import default_abstainer
            from rag.answer.reader import default_reader
            from rag.encoders import minilm_query_encoder

            minilm_query_encoder()
            default_reader()
            default_abstainer()
        except Exception:  # noqa: BLE001 - the call that needs the model raises it to the user
            pass

    thread = threading.Thread(target=load, name="load-answer-models", daemon=True)
    thread.start()
    return thread
