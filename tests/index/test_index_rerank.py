"""ivf-pq-rerank (4-bit fast-scan IVF-PQ + exact rerank from a memory-mapped float file) with real FAISS and the
real index store: recall against flat and ivf-pq, the save/load round trip, refusals."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from rag.config import RagError, RagWarning
from rag.index.kinds import code_bytes
from rag.index.search_index import RERANK_FILE, build_index
from rag.index.spec import IndexSpec
from rag.index.store import IndexCorrupt, build_and_save, load_index
from rag.index.versions import MANIFEST, manifest_digest, sha256_file

RERANK_KIND = "ivf-pq-rerank"


@pytest.fixture(scope="module")
def clustered_vectors():
    """3,000 base and 200 held-out query vectors at d=128 drawn from a mixture of 64 Gaussian clusters (embeddings
    of real text are clustered; isotropic noise is not). No encoder: encoding 3,200 SciFact abstracts with MiniLM
    costs ~3 minutes on 2 cores. Real-vector figures: docs/results-scale.md (`rag bench scale`, real MiniLM and 1M)."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(64, 128)).astype(np.float32)
    x = centers[rng.integers(64, size=3200)] + rng.normal(size=(3200, 128)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x[:3000], x[3000:]


def recall_at_10(rows: np.ndarray, truth: np.ndarray) -> float:
    return float(np.mean([len(set(r) & set(t)) / 10 for r, t in zip(rows.tolist(), truth.tolist())]))


def test_rerank_reaches_the_recall_goal_where_ivf_pq_does_not(clustered_vectors):
    base, queries = clustered_vectors
    _, truth = build_index(base, "flat").search(queries, 10)
    index = build_index(base, RERANK_KIND)
    scores, rows = index.search(queries, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagWarning)  # ivf-pq's 256 centroids want more than 3,000 points
        _, pq_rows = build_index(base, "ivf-pq").search(queries, 10)
    ours, theirs = recall_at_10(rows, truth), recall_at_10(pq_rows, truth)
    assert ours >= 0.9 and ours > theirs, (ours, theirs)
    # the scores are the exact inner products of the rows returned, best first
    np.testing.assert_allclose(scores, np.einsum("qkd,qd->qk", base[rows], queries), rtol=1e-5, atol=1e-5)
    assert (np.diff(scores, axis=1) <= 1e-6).all()
    # RAM holds d/2 code bytes per vector; the floats (4·d) are counted in nbytes, the stored bytes
    assert code_bytes(RERANK_KIND, 128, 3000) == 64 + 8
    assert index.nbytes >= base.nbytes + 64 * len(base)


def test_few_vectors_warn_once_and_still_search_exactly():
    x = np.random.default_rng(0).normal(size=(10, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    with pytest.warns(RagWarning, match=f"{RERANK_KIND} on 10 vectors"):
        index = build_index(x, RERANK_KIND)
    scores, rows = index.search(x[:3], 12)  # k beyond n: every row, each vector first for its own query
    assert rows.shape == (3, 10) and rows[:, 0].tolist() == [0, 1, 2]
    assert sorted(rows[0].tolist()) == list(range(10))


def test_a_streaming_build_is_refused():
    x = np.eye(64, 8, dtype=np.float32)
    with pytest.raises(RagError, match="--stream"):
        build_index(x, RERANK_KIND, size_for=10_000)


@pytest.fixture
def stored(scifact_small):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagWarning)  # 140 passages: few training points, said once
        manifest = build_and_save(scifact_small, IndexSpec("minilm", 64, RERANK_KIND))
    return scifact_small, manifest


def test_store_round_trip_keeps_the_floats_on_disk_and_the_results(stored):
    from rag.encoders.cache import cached_embeddings

    corpus, manifest = stored
    assert RERANK_FILE in manifest["files"] and manifest["bytes_per_vector"] > 4 * 64
    loaded = load_index(corpus, IndexSpec("minilm", 64, RERANK_KIND))
    assert isinstance(loaded.index.floats, np.memmap) and loaded.index.floats.shape == (len(corpus.passages), 64)
    x = loaded.reducer.transform(cached_embeddings(corpus, "minilm", 384)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RagWarning)
        fresh = build_index(x, RERANK_KIND)
    got, want = loaded.index.search(x[:20], 10), fresh.search(x[:20], 10)
    assert np.array_equal(got[1], want[1]) and np.allclose(got[0], want[0])
    # 140 vectors, 200 reranked from every probed list: the exact top-10
    assert np.array_equal(got[1], build_index(x, "flat").search(x[:20], 10)[1])


def reseal(version, files_too: bool) -> None:
    m = json.loads((version / MANIFEST).read_text())
    if files_too:
        m["files"] = {name: sha256_file(version / name) for name in m["files"]}
    m["manifest_sha256"] = manifest_digest(m)
    (version / MANIFEST).write_text(json.dumps(m))


@pytest.mark.parametrize(
    "damage, message",
    [
        ("flip", "fails its sha256 checksum"),
        ("missing", "fails its sha256 checksum"),
        ("unlisted", f"{RERANK_FILE} is not covered"),
        ("wrong_shape_resealed", f"{RERANK_FILE} holds (140, 32)"),
    ],
)
def test_a_damaged_float_file_is_refused(stored, damage, message):
    corpus, _ = stored
    version = load_index(corpus, IndexSpec("minilm", 64, RERANK_KIND)).path
    path = version / RERANK_FILE
    if damage == "flip":
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "missing":
        path.unlink()
    elif damage == "unlisted":
        m = json.loads((version / MANIFEST).read_text())
        del m["files"][RERANK_FILE]
        (version / MANIFEST).write_text(json.dumps(m))
        reseal(version, files_too=False)
    else:
        np.save(path, np.zeros((140, 32), np.float32))
        reseal(version, files_too=True)
    with pytest.raises(IndexCorrupt, match="rebuild") as refused:
        load_index(corpus, IndexSpec("minilm", 64, RERANK_KIND))
    assert message in str(refused.value)


def test_sharded_builds_refuse_the_kind_in_one_line(scifact_small):
    from rag.index.shards import build_sharded

    with pytest.raises(RagError, match="without --shards") as refused:
        build_sharded(scifact_small, IndexSpec("minilm", 64, RERANK_KIND, "pca"), shards=2)
    assert "\n" not in str(refused.value)
