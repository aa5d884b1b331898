"""Interpolated modified Kneser-Ney: a hand-checked example, the count-of-counts discounts, NLTK agreement, wiki-lm."""

import math
import re

import numpy as np
import pytest

from rag.lm.kn import KneserNey, discounts


def test_discounts_from_count_of_counts_by_hand():
    # n1=10, n2=4, n3=2, n4=1: Y = 10/(10+8) = 5/9
    counts = np.array([1] * 10 + [2] * 4 + [3] * 2 + [4] * 1 + [7] * 3)
    d1, d2, d3 = discounts(counts)
    y = 5 / 9
    assert d1 == pytest.approx(1 - 2 * y * 4 / 10)  # 0.5556
    assert d2 == pytest.approx(2 - 3 * y * 2 / 4)  # 1.1667
    assert d3 == pytest.approx(3 - 4 * y * 1 / 2)  # 1.8889


def test_modified_kn_bigram_by_hand():
    """Corpus a b a b a c b (a=0, b=1, c=2), V=3, discounts D1=0.5, D2=1.0, D3+=1.5 at both orders.

    Unigram level (continuation counts): N1+(•a)=1 {b}, N1+(•b)=2 {a,c}, N1+(•c)=1 {a}; total 4;
    gamma = (0.5·2 + 1.0·1)/4 = 0.5, so p1(a) = (1−0.5)/4 + 0.5/3 = 7/24, p1(b) = (2−1)/4 + 0.5/3 = 10/24, p1(c) = 7/24.
    Bigram level (raw counts): after a: ab×2, ac×1, S=3, gamma = (0.5·1 + 1.0·1)/3 = 0.5:
      p(b|a) = (2−1)/3 + 0.5·10/24 = 13/24, p(c|a) = 0.5/3 + 0.5·7/24 = 7.5/24, p(a|a) = 0.5·7/24 = 3.5/24.
    After c: cb×1, S=1, gamma = 0.5: p(b|c) = 0.5 + 0.5·10/24 = 17/24. An unseen context falls back to p1.
    """
    ids = np.array([0, 1, 0, 1, 0, 2, 1])
    kn = KneserNey(ids, vocab=3, order=2, discount=(0.5, 1.0, 1.5))
    np.testing.assert_allclose(kn.distribution([]), [7 / 24, 10 / 24, 7 / 24])
    np.testing.assert_allclose(kn.distribution([0]), [3.5 / 24, 13 / 24, 7.5 / 24])
    np.testing.assert_allclose(kn.distribution([2]), [3.5 / 24, 17 / 24, 3.5 / 24])
    # the same figures through the scoring path used for the LMs' targets
    np.testing.assert_allclose(kn.probs(np.array([0, 1, 2, 1]), np.array([1, 3])), [13 / 24, 17 / 24])
    # position 0 has no history: scored by the unigram level
    np.testing.assert_allclose(kn.probs(np.array([1, 0]), np.array([0])), [10 / 24])


@pytest.mark.parametrize("order", [3, 4])
def test_modified_kn_distributions_sum_to_one(order):
    rng = np.random.default_rng(order)
    ids = np.concatenate([np.tile([1, 2, 3, 4, 5], 60), rng.integers(0, 7, 400)])
    kn = KneserNey(ids, vocab=7, order=order)
    assert all(0 <= d <= r for level in kn.levels for d, r in zip(level.d, (1, 2, 3)))
    for ctx in ([1, 2, 3], [6, 6, 6], [0, 4, 5], [2, 3]):
        p = kn.distribution(ctx)
        assert p.sum() == pytest.approx(1.0) and (p > 0).all()
    pattern = np.tile([1, 2, 3, 4, 5], 20)  # text like the train split's: far better than uniform
    assert -np.log(kn.probs(pattern, np.arange(len(pattern)))).mean() < 0.5 * math.log(7)


def _wiki_words(data_dir, n):
    text = (data_dir / "wiki-lm" / "wiki.train.raw").read_text(encoding="utf-8")[:200_000]
    return re.findall(r"\w+|[^\w\s]", text)[:n]


@pytest.mark.parametrize("order", [3, 4])
def test_single_discount_mode_matches_nltk_kneser_ney_interpolated(order, data_dir):
    """NLTK's KneserNeyInterpolated has one discount and no uniform floor: compare like with like on real words."""
    lm_mod = pytest.importorskip("nltk.lm")
    from nltk.util import everygrams

    words = ["<bos>"] + _wiki_words(data_dir, 1000)  # a token that never recurs: no context starts the stream
    index = {w: i for i, w in enumerate(dict.fromkeys(words))}
    ids = np.array([index[w] for w in words])
    names = list(index)
    lm = lm_mod.KneserNeyInterpolated(order=order, discount=0.75)
    lm.fit([list(everygrams(words, max_len=order))], vocabulary_text=words)
    kn = KneserNey(ids, vocab=len(index), order=order, discount=0.75, floor=False)
    rng = np.random.default_rng(0)
    seen_t = rng.choice(np.arange(order, len(ids)), 40, replace=False)
    # unseen histories: real words from later text in a new order (known words only)
    later = [w for w in _wiki_words(data_dir, 6000)[3000:] if w in index][:400]
    held = np.array([index[w] for w in later])
    held_t = np.arange(order - 1, len(held), 10)
    for stream, targets in ((ids, seen_t), (held, held_t)):
        ours = kn.probs(stream, targets)
        theirs = [lm.score(names[stream[t]], tuple(names[i] for i in stream[t - order + 1 : t])) for t in targets]
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_wiki_lm_modified_kn_beats_the_additive_trigram(data_dir):
    """BPE-10k wiki-lm, whole test split: modified KN trigram about 1.83 bits/byte (the reference figure); 4-gram lower."""
    from rag.lm.baselines import baselines
    from rag.lm.data import prepare
    from rag.lm.kn import kn_baselines

    tok = prepare("wiki-lm", 10000)
    kn = kn_baselines(tok, 128, None, (3, 4))["models"]
    old = baselines(tok, 128, None)["models"]
    assert kn["kn3"]["test_bpb"] == pytest.approx(1.83, abs=0.03)
    assert kn["kn4"]["test_bpb"] < kn["kn3"]["test_bpb"] < old["trigram"]["test_bpb"]
