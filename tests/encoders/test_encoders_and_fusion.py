"""The SmolLM2 token-whitened BM25-pooled encoder, z-score fusion, and the encoder registry."""

import numpy as np
import pytest

from rag.retrieve import zscore_fuse


def test_zscore_fusion_matches_hand_computation():
    dense = np.array([[1.0, 2.0, 3.0]])  # mean 2, std sqrt(2/3)
    sparse = np.array([[0.0, 0.0, 6.0]])  # mean 2, std sqrt(8)
    fused = zscore_fuse(dense, sparse, weight=0.5)
    zd = (dense - 2) / np.sqrt(2 / 3)
    zs = (sparse - 2) / np.sqrt(8)
    np.testing.assert_allclose(fused, 0.5 * zd + 0.5 * zs, rtol=1e-6)
    # a constant side (no lexical match at all) contributes nothing, not NaN
    assert np.isfinite(zscore_fuse(dense, np.zeros((1, 3)), 0.5)).all()


def _ndcg(encoder, corpus):
    from rag.encoders.base import document_text
    from rag.studies.metrics import ir_metrics

    if hasattr(encoder, "fit"):
        encoder.fit([document_text(p) for p in corpus.passages])
    docs = encoder.encode([document_text(p) for p in corpus.passages], kind="document")
    queries = encoder.encode([q.text for q in corpus.queries], kind="query")
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scores = queries @ docs.T
    run = {q.id: {p.id: float(s) for p, s in zip(corpus.passages, row)} for q, row in zip(corpus.queries, scores)}
    return ir_metrics(corpus.qrels, run)["mean"]["ndcg@10"], encoder


def test_whitened_bm25_table_encoder_beats_mean_pooling(scifact_small):
    from rag.encoders import get_encoder

    mean_ndcg, _ = _ndcg(get_encoder("smollm2-input-mean"), scifact_small)
    wbm25_ndcg, enc = _ndcg(get_encoder("smollm2-input-wbm25"), scifact_small)
    assert wbm25_ndcg > mean_ndcg + 0.1, (wbm25_ndcg, mean_ndcg)
    # the fitted statistics round-trip (they are saved beside an index and cached with the embeddings)
    texts = [q.text for q in scifact_small.queries[:5]]
    before = enc.encode(texts, kind="query")
    enc.set_state(enc.get_state())
    np.testing.assert_allclose(enc.encode(texts, kind="query"), before, rtol=1e-5)
    assert enc.encode([texts[0]], kind="query").shape == (1, 576)


def test_whitened_encoder_refuses_to_encode_before_fit():
    from rag.config import RagError
    from rag.encoders.tables import WhitenedBM25TableEncoder

    class Tok:
        def encode(self, text, add_special_tokens=False):
            return [1, 2]

    enc = WhitenedBM25TableEncoder("w", Tok(), np.eye(4, dtype=np.float32))
    with pytest.raises(RagError, match="fit it on the documents"):
        enc.encode(["x"])


def test_the_registry_knows_every_encoder_once_and_refuses_unknown_names():
    from rag.config import RagError
    from rag.encoders import ENCODER_NAMES, encoder_spec, encoder_width

    assert encoder_width("minilm") == 384 and encoder_width("smollm2-input-wbm25") == 576
    assert encoder_spec("lm:/some/run").name == "lm:"
    assert len(set(ENCODER_NAMES)) == len(ENCODER_NAMES)
    for bad in ("nope", "lm:", "minilm2"):
        with pytest.raises(RagError, match="valid encoders: minilm, smollm2-input"):
            encoder_spec(bad)
