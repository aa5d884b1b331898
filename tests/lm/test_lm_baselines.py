"""Count baselines (unigram, interpolated bigram/trigram) and bits per byte, on real wiki-lm tokens."""

import math

import numpy as np
import pytest

from rag.lm.baselines import NGramBaselines, baselines, eval_targets, token_bytes


def test_interpolated_distributions_sum_to_one_and_bigram_beats_unigram():
    rng = np.random.default_rng(0)
    ids = np.concatenate([np.tile([1, 2, 3, 4], 200), rng.integers(0, 6, 200)]).astype(np.uint16)
    nb = NGramBaselines(ids, vocab=6)
    nb.tune(ids, np.arange(2, len(ids)))
    for u, v in ((1, 2), (0, 5), (3, 4)):
        assert nb.bigram_probs(v).sum() == pytest.approx(1.0)
        assert nb.trigram_probs(u, v).sum() == pytest.approx(1.0)
    nats = nb.nats(ids, np.arange(2, len(ids)))
    assert nats["trigram"] <= nats["bigram"] < nats["unigram"] < math.log(6) + 0.01


def test_eval_targets_are_the_transformers_targets():
    from rag.lm.data import eval_batches

    ids = np.arange(1000, dtype=np.uint16)
    ys = np.concatenate([y.numpy().ravel() for _, y in eval_batches(ids, 4, 32, 512)])
    np.testing.assert_array_equal(ids[eval_targets(len(ids), 32, 512)], ys)


@pytest.mark.slow
def test_wiki_lm_baselines_match_the_reference_figures(data_dir):
    """BPE-10k on the wiki-lm train split: unigram about 2.7 bits/byte, bigram about 2.03, trigram about 1.92."""
    from rag.lm.data import load_tokenizer, prepare

    tok = prepare("wiki-lm", 10000)
    nb = token_bytes(load_tokenizer(tok.tokenizer_path))
    text = "The history of Wikipedia — naïve café, 1998."
    enc = load_tokenizer(tok.tokenizer_path).encode(text)
    assert nb[enc.ids].sum() == len(text.encode("utf-8"))  # one vocabulary character is one byte
    b = baselines(tok, 128, None)
    m = b["models"]
    assert m["unigram"]["test_bpb"] == pytest.approx(2.70, abs=0.05)
    assert m["bigram"]["test_bpb"] == pytest.approx(2.03, abs=0.05)
    assert m["trigram"]["test_bpb"] == pytest.approx(1.94, abs=0.05)
    assert 200 < m["bigram"]["test_ppl"] < 300 and b["targets"]["test"] == (len(tok.ids["test"]) - 1) // 128 * 128
