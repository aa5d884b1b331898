"""The ONNX Runtime backends of MiniLM: the same vectors as torch, a torch-free query path, a checksum-verified
model cache, and every refusal the issue lists (missing onnxruntime, table encoders, disagreeing indexes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from conftest import REPO

from rag.config import RagError
from rag.encoders.base import document_text
from rag.index.spec import IndexSpec

HEAVY = ("torch", "transformers", "sentence_transformers")


@pytest.fixture(scope="session")
def onnx_encoders():
    """The fp32 and int8 ONNX encoders, exported once into the test cache (kept across runs)."""
    from rag.encoders import get_encoder

    return get_encoder("minilm", "onnx"), get_encoder("minilm", "onnx-int8")


@pytest.mark.slow
def test_onnx_vectors_match_torch(onnx_encoders, scifact_small):
    """fp32 ONNX reproduces the torch vectors; int8 stays close (published: ~0.96 mean cosine)."""
    from rag.encoders import get_encoder

    fp32, int8 = onnx_encoders
    texts = [document_text(p) for p in scifact_small.passages[:12]] + [q.text for q in scifact_small.queries[:4]]
    reference = get_encoder("minilm", "torch").encode(texts, kind="document")
    assert np.abs(fp32.encode(texts, kind="document") - reference).max() < 1e-4
    cos = (int8.encode(texts, kind="document") * reference).sum(1)
    assert cos.mean() > 0.98 and cos.min() > 0.95
    assert fp32.encode([]).shape == (0, 384)


def test_corrupt_or_truncated_cached_model_is_rebuilt_with_a_warning(onnx_encoders, tmp_path, monkeypatch):
    """A cache whose int8 file is truncated (and whose fp32 file was flipped) is detected by checksum and rebuilt."""
    from rag.encoders import onnx

    good_fp32, good_int8 = onnx.model_file("onnx"), onnx.model_file("onnx-int8")
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    fp32, int8 = onnx.model_file("onnx"), onnx.model_file("onnx-int8")
    fp32.parent.mkdir(parents=True)
    for src, dst in ((good_fp32, fp32), (good_int8, int8)):
        shutil.copy(src, dst)
        shutil.copy(onnx.checksum_file(src), onnx.checksum_file(dst))
    data = bytearray(fp32.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the fp32 weights
    fp32.write_bytes(bytes(data))
    with pytest.warns(onnx.OnnxCacheWarning, match="fails its sha256"):
        assert onnx.verified_bytes(fp32) is None
    shutil.copy(good_fp32, fp32)  # (re-exporting fp32 would take a torch import; int8 re-quantizes from it)
    int8.write_bytes(good_int8.read_bytes()[:1000])  # truncated
    with pytest.warns(onnx.OnnxCacheWarning, match="int8.onnx fails its sha256"):
        rebuilt = onnx.ensure_model("onnx-int8")
    assert onnx.verified_bytes(int8) == rebuilt and len(rebuilt) > 1_000_000
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a verified cache is used silently
        assert onnx.ensure_model("onnx-int8") == rebuilt


def test_a_verified_model_is_not_hashed_again_until_it_changes(onnx_encoders, tmp_path, monkeypatch):
    """A model that passed its sha256 is handed to ONNX Runtime by path while its size, mtime and inode stay; a
    byte written in place (same size, same inode) is caught by the hash again."""
    from rag.encoders import onnx

    good_int8 = onnx.model_file("onnx-int8")
    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))
    int8 = onnx.model_file("onnx-int8")
    int8.parent.mkdir(parents=True)
    shutil.copy(good_int8, int8)
    shutil.copy(onnx.checksum_file(good_int8), onnx.checksum_file(int8))
    good = onnx.model_source(int8)
    assert isinstance(good, bytes) and not onnx.stamp_file(int8).exists()  # written a moment ago: hashed each time
    old = time.time() - 60
    os.utime(int8, (old, old))
    assert onnx.model_source(int8) == good and onnx.stamp_file(int8).exists()
    with monkeypatch.context() as m:
        m.setattr(onnx.hashlib, "sha256", None)  # the recorded look is trusted: no hash is taken
        assert onnx.model_source(int8) == str(int8)
    with open(int8, "r+b") as f:
        f.seek(len(good) // 2)
        f.write(bytes([good[len(good) // 2] ^ 0xFF]))
    with pytest.warns(onnx.OnnxCacheWarning, match="fails its sha256"):
        assert onnx.model_source(int8) is None


def test_missing_onnxruntime_is_one_line_naming_the_extra(monkeypatch):
    from rag.encoders.onnx import OnnxEncoder

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what an install without the extra looks like
    with pytest.raises(RagError) as err:
        OnnxEncoder("onnx")
    assert "pip install" in str(err.value) and "[onnx]" in str(err.value) and "\n" not in str(err.value)


def test_backend_vocabulary_and_table_encoders_refuse_onnx(cli):
    from rag.encoders import ENCODER_BACKENDS, check_backend
    from rag.retrieve import RetrievalSettings

    assert set(ENCODER_BACKENDS) == {"torch", "onnx", "onnx-int8"}
    assert check_backend("minilm", None) == "onnx"  # documents (and get_encoder): fp32, the reference vectors
    assert RetrievalSettings().validated().backend == check_backend("minilm", None, queries=True) == "onnx-int8"
    assert RetrievalSettings(encoder="smollm2-input").validated().backend == "torch"
    with pytest.raises(RagError, match="smollm2-input' has no onnx backend.*--backend torch"):
        RetrievalSettings(encoder="smollm2-input", backend="onnx").validated()
    with pytest.raises(RagError, match="unknown backend 'tensorrt'; valid backends: torch, onnx, onnx-int8"):
        RetrievalSettings(backend="tensorrt").validated()
    result = cli(["search", "what is d?", "--encoder", "smollm2-input-mean", "--backend", "onnx-int8"])
    assert result.exit_code != 0 and "has no onnx-int8 backend" in result.output
    result = cli(["index", "build", "--encoder", "smollm2-input", "--backend", "onnx"])
    assert result.exit_code != 0 and "has no onnx backend" in result.output


@pytest.mark.slow
def test_query_path_imports_no_torch(onnx_encoders, index_dir):
    """`rag search` and `rag ask --llm extractive` with an ONNX backend, each in a fresh interpreter: after the
    answer is printed, sys.modules holds no torch, transformers or sentence-transformers (once the query models are
    prepared, as `rag index build` does)."""
    from rag.agent.prepare import prepare_query_models
    from rag.data.corpus import load_corpus
    from rag.index.store import build_and_save

    build_and_save(load_corpus("builtin"), IndexSpec("minilm", backend="onnx"))
    prepare_query_models(lambda line: None)
    probe = (
        "import sys, json; sys.argv = ['rag'] + sys.argv[1:]\n"
        "from cli import app\n"
        "code = 'returned'\ntry:\n    app()\nexcept SystemExit as e:\n    code = e.code\n"
        f"print('\\nLOADED', json.dumps([m for m in {HEAVY!r} if m in sys.modules]), code)\n"
    )
    env = {**os.environ, "COLUMNS": "120"}
    outputs = []
    for args in (
        ["search", "What does the embedding dimension control?", "--backend", "onnx", "--json"],
        ["ask", "What does the embedding dimension control?", "--llm", "extractive", "--backend", "onnx-int8"],
    ):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        *printed, last = done.stdout.strip().splitlines()
        assert last == "LOADED [] 0", (args[0], last, done.stderr[-2000:])
        outputs.append("\n".join(printed))
    hits = json.loads(outputs[0])
    assert hits["backend"] == "onnx" and hits["passages"]


@pytest.mark.slow
def test_index_from_another_backend_is_checked_on_its_probe_set(onnx_encoders, scifact_small):
    """int8-built index: fp32 queries agree on the probe set (accepted); a probe whose vectors do not match its
    texts is refused with a hint; an old index without a probe set is accepted only by a same-vectors backend."""
    from rag.encoders import get_encoder
    from rag.encoders.probe import PROBE_MIN_COSINE, accept_backend, check_probe
    from rag.index.store import build_and_save, load_index

    build_and_save(scifact_small, IndexSpec("minilm", kind="flat", backend="onnx-int8"))
    loaded = load_index(scifact_small, IndexSpec("minilm"), backend="onnx")  # probe check runs: fp32 vs int8 vectors
    assert loaded.manifest["backend"] == "onnx-int8" and "probe.npz" in loaded.manifest["files"]
    agreement = accept_backend(loaded.path, loaded.manifest, "minilm", "onnx", "rebuild")
    assert agreement["n"] == 8 and PROBE_MIN_COSINE <= agreement["mean"] < 0.99999
    with np.load(loaded.path / "probe.npz") as f:
        shifted = {"texts": f["texts"], "vectors": np.roll(f["vectors"], 1, axis=0)}  # each text, another's vector
    bad = loaded.path.parent / "shifted-probe.npz"
    np.savez(bad, **shifted)
    with pytest.raises(RagError, match="disagree with it on its probe set.*--backend onnx-int8"):
        check_probe(bad, "shifted", get_encoder("minilm", "onnx"), "onnx-int8", "onnx", "rebuild")
    legacy = {k: v for k, v in loaded.manifest.items() if k not in ("backend", "files")}  # built before backends
    assert accept_backend(loaded.path, legacy, "minilm", "onnx", "rebuild")["same_vectors"]
    with pytest.raises(RagError, match="built with the torch backend and stores no probe set"):
        accept_backend(loaded.path, legacy, "minilm", "onnx-int8", "rebuild")


def test_default_queries_fall_back_to_the_build_backend_where_int8_disagrees(tmp_path, monkeypatch):
    """MiniLM's int8 kernels round differently by CPU; where the default int8 query vectors miss an index's probe
    bar, the queries run with the backend that built it, with a warning, unless the user chose the backend."""
    from rag.config import RagWarning
    from rag.encoders import probe
    from rag.retrieve import RetrievalSettings, Retriever

    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(["Rotate the deploy keys every ninety days.", "The cafeteria opens at eight."]):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\n{text}\n")
    Retriever.open(RetrievalSettings(corpus=str(folder), retriever="dense"))  # built with fp32 ONNX
    monkeypatch.setattr(probe, "PROBE_MIN_COSINE", 0.99999)  # a bar that int8 vectors miss on any CPU
    with pytest.warns(RagWarning, match="querying with the onnx backend it was built with"):
        fallback = Retriever.open(RetrievalSettings(corpus=str(folder), retriever="dense"))
    assert fallback.settings.backend == "onnx" and fallback.description["backend"] == "onnx"
    assert "Rotate" in fallback.search_many(["how often are the deploy keys rotated?"], k=1)[0][0].passage.text
    with pytest.raises(probe.BackendDisagrees, match="query with --backend onnx"):
        Retriever.open(RetrievalSettings(corpus=str(folder), retriever="dense", backend="onnx-int8"))
