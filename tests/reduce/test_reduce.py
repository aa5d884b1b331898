"""Reducers beyond PCA: distill (learned without labels), ITQ rotations, pseudo-queries, the opq-pq kind.

Real MiniLM vectors of a real SciFact subset; real FAISS; real torch training (a few seconds of budget)."""

import numpy as np
import pytest

from rag.encoders import get_encoder
from rag.encoders.cache import embed_corpus
from rag.index.kinds import code_bytes, pq_shape
from rag.index.search_index import SearchIndex, build_index
from rag.index.spec import IndexSpec
from rag.reduce import Reducer, ReducerWarning
from rag.reduce.distill import overlap_at_k
from rag.reduce.pseudo import picked_documents, pseudo_query_texts, pseudo_query_vectors


@pytest.fixture(scope="module")
def vectors(scifact_small):
    enc = get_encoder("minilm")
    docs = embed_corpus(scifact_small, enc)
    return docs, pseudo_query_vectors(scifact_small, enc, n=120)


def test_pseudo_queries_come_from_the_documents_and_held_out_ones_avoid_the_training_documents(scifact_small):
    passages = scifact_small.passages
    texts = pseudo_query_texts(passages, 30, seed=0)
    assert len(texts) == 30 and texts == pseudo_query_texts(passages, 30, seed=0)  # deterministic
    body = " ".join(p.title + " " + p.text for p in passages)
    assert all(t and t in body for t in texts)  # titles, first sentences, spans: all cut from the corpus
    avoid = picked_documents(len(passages), 60, 0)
    held = pseudo_query_texts(passages, 40, seed=1, avoid=avoid)
    avoided_text = {pseudo for i in avoid for pseudo in [passages[i].title, passages[i].text]}
    assert not any(h == passages[i].title for h in held for i in avoid if passages[i].title) and avoided_text


@pytest.mark.slow
def test_distill_keeps_more_of_the_full_width_neighbours_than_pca_and_round_trips(vectors, tmp_path):
    docs, queries = vectors
    pca = Reducer.fit(docs, 16, "pca")
    distill = Reducer.fit(docs, 16, "distill", queries=queries, budget_s=8)
    info = distill.fit_info
    assert distill.kind == "distill" and distill.matrix.shape == (docs.shape[1], 16)
    assert info["steps"] > 0 and not info["fell_back"] and info["overlap@10"] > info["pca_overlap@10"]
    assert not np.allclose(distill.matrix, pca.matrix)
    # the held-out score in fit_info is what the saved matrix reproduces
    n_val = info["held_out_queries"]
    val = queries[:n_val] / np.linalg.norm(queries[:n_val], axis=1, keepdims=True)
    ref = np.argpartition(-(val @ docs.T), 9, axis=1)[:, :10]
    assert overlap_at_k(distill.transform(val), distill.transform(docs), ref) == pytest.approx(
        info["overlap@10"], abs=1e-3
    )
    distill.save(tmp_path)
    back = Reducer.load(tmp_path)
    assert back.kind == "distill" and back.fit_info == info
    np.testing.assert_array_equal(back.transform(docs[:5]), distill.transform(docs[:5]))


def test_distill_that_cannot_beat_pca_warns_and_falls_back_to_pca(vectors):
    docs, queries = vectors
    with pytest.warns(ReducerWarning, match="did not beat PCA"):
        r = Reducer.fit(docs, 16, "distill", queries=queries, budget_s=0)  # no training step fits the budget
    assert r.fit_info["fell_back"] and r.fit_info["steps"] == 0
    np.testing.assert_allclose(r.transform(docs), Reducer.fit(docs, 16, "pca").transform(docs), atol=1e-6)


def test_itq_keeps_float_scores_and_makes_better_sign_bits(vectors):
    docs, _ = vectors
    pca, itq = Reducer.fit(docs, 32, "pca"), Reducer.fit(docs, 32, "itq")
    p, i = pca.transform(docs), itq.transform(docs)
    np.testing.assert_allclose(p @ p[:10].T, i @ i[:10].T, atol=1e-4)  # a rotation: the same inner products

    def sign_error(v):
        return float(np.mean((np.sign(v) * np.abs(v).mean() - v) ** 2))

    assert sign_error(i) < sign_error(p)


def test_opq_pq_builds_searches_and_round_trips(vectors, tmp_path):
    docs, _ = vectors
    x = Reducer.fit(docs, 32, "pca").transform(docs)
    index = build_index(x, "opq-pq")
    m, bits = pq_shape(32, len(x))  # a tiny corpus gets fewer bits per code
    assert code_bytes("opq-pq", 32, len(x)) == -(-m * bits // 8) and len(index) == len(x)
    _, rows = index.search(x[:5], 5)
    assert (rows[:, 0] == np.arange(5)).mean() >= 0.8  # a document finds itself first
    path = tmp_path / "index.faiss"
    path.write_bytes(index.serialize())
    back = SearchIndex.read("opq-pq", path, 32)
    np.testing.assert_array_equal(back.search(x[:5], 5)[1], rows)


@pytest.mark.slow
def test_a_distilled_binary_index_is_built_stored_and_loaded_with_its_learned_reducer(scifact_small):
    from rag.index.store import build_and_save, load_index

    manifest = build_and_save(scifact_small, IndexSpec("minilm", 32, "binary", "distill-itq"))
    assert manifest["reduce"] == "distill-itq" and manifest["path"].endswith("-distill-itq")
    loaded = load_index(scifact_small, IndexSpec("minilm", 32, "binary", "distill-itq"))
    reducer = loaded.reducer
    assert reducer.kind == "distill-itq" and reducer.fit_info["steps"] > 0 and reducer.matrix.shape == (384, 32)
    enc = get_encoder("minilm")
    q = [q for q in scifact_small.queries if q.id in scifact_small.qrels][:5]
    _, rows = loaded.index.search(reducer.transform(enc.encode([x.text for x in q], kind="query")), 10)
    found = [{loaded.passages[j].id for j in r} & set(scifact_small.qrels[x.id]) for x, r in zip(q, rows)]
    assert sum(bool(f) for f in found) >= 3  # real retrieval through the stored learned reducer and sign bits


@pytest.mark.parametrize("kind", ["pca", "whiten", "abtt"])
def test_one_passage_cannot_fit_axes_and_falls_back_to_truncation_with_a_warning(kind):
    """One centred vector is zero: a fitted reducer would give NaN or empty vectors, and search would find nothing."""
    x = np.random.default_rng(0).normal(size=(1, 32)).astype(np.float32)
    with pytest.warns(ReducerWarning, match="cannot fit"):
        r = Reducer.fit(x, 8, kind)
    out = r.transform(x)
    assert r.fit_info["fell_back"] == "truncate" and np.isfinite(out).all()
    assert np.allclose(out, x[:, :8] / np.linalg.norm(x[:, :8]), atol=1e-6)
