"""Interpolated modified Kneser-Ney n-gram models (Chen & Goodman 1998), on the transformers' BPE tokens.

For an n-gram model the level of order k (k = 1..n) has counts c_k: the raw counts for k = n, the continuation
counts N1+(• g) (how many distinct tokens precede the k-gram g in the train split) for k < n. Then

    p_k(w | h) = max(c_k(h w) − D_k(c_k(h w)), 0) / S_k(h)  +  γ_k(h) · p_{k−1}(w | h')
    γ_k(h)     = (D_k1·N1(h•) + D_k2·N2(h•) + D_k3+·N3+(h•)) / S_k(h)

with S_k(h) = Σ_w c_k(h w), N_r(h•) the number of w with c_k(h w) = r (N3+: ≥ 3), h' = h without its first token,
and p_0(w) = 1/V (the uniform floor). An unseen context (S_k(h) = 0) hands its mass to p_{k−1} whole. A target with
fewer than k−1 tokens before it in its split uses the highest order its history allows. Discounts per order from
that order's count-of-counts n_r: Y = n1/(n1+2·n2), D1 = 1−2Y·n2/n1, D2 = 2−3Y·n3/n2, D3+ = 3−4Y·n4/n3.

`discount` may instead be one number for every count (D for 1, 2 and 3+), a fixed (D1, D2, D3+) for every order,
or "single" (D = Y, Ney's estimate):
with floor=False (the unigram level is N1+(•w)/N1+(••), no uniform floor) and a fixed D this is exactly NLTK's
KneserNeyInterpolated, which the tests compare against.
Scored targets and bytes are the LMs' (rag.lm.baselines.eval_targets, token_bytes); fitted on the train split only.
"""

from __future__ import annotations

import math

import numpy as np


def gram_keys(ids: np.ndarray, k: int, vocab: int) -> np.ndarray:
    """int64 key Σ ids[i+j]·V^(k−1−j) of every k-gram of a token stream."""
    ids = ids.astype(np.int64)
    n = len(ids) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    key = ids[:n].copy()
    for j in range(1, k):
        key = key * vocab + ids[j : j + n]
    return key


def discounts(counts: np.ndarray) -> tuple[float, float, float]:
    """(D1, D2, D3+) from the count-of-counts n1..n4 of one order (Chen & Goodman, eq. 26), kept in [0, r]."""
    n = [int((counts == r).sum()) for r in (1, 2, 3, 4)]
    if n[0] == 0 or n[1] == 0:
        return 0.5, 1.0, 1.5  # too few counts to estimate: conventional fallback
    y = n[0] / (n[0] + 2 * n[1])
    d1 = 1 - 2 * y * n[1] / n[0]
    d2 = 2 - 3 * y * n[2] / n[1]
    d3 = 3 - 4 * y * n[3] / n[2] if n[2] else d2
    return tuple(float(min(max(d, 0.0), r)) for d, r in ((d1, 1), (d2, 2), (d3, 3)))


class _Level:
    """One order: sorted gram keys with their counts; per context the total and the N1/N2/N3+ type counts."""

    def __init__(self, keys: np.ndarray, counts: np.ndarray, vocab: int, disc):
        order = np.argsort(keys, kind="stable")
        self.keys, self.counts = keys[order], counts[order].astype(np.float64)
        ctx = self.keys // vocab
        self.ctx, inv = np.unique(ctx, return_inverse=True)
        m = len(self.ctx)
        self.total = np.bincount(inv, weights=self.counts, minlength=m)
        self.n1 = np.bincount(inv, weights=self.counts == 1, minlength=m)
        self.n2 = np.bincount(inv, weights=self.counts == 2, minlength=m)
        self.n3 = np.bincount(inv, weights=self.counts >= 3, minlength=m)
        if isinstance(disc, (tuple, list)):  # (D1, D2, D3+) given
            self.d = tuple(float(x) for x in disc)
        elif disc == "modified":
            self.d = discounts(self.counts)
        else:
            if disc == "single":
                n1, n2 = int((self.counts == 1).sum()), int((self.counts == 2).sum())
                disc = n1 / (n1 + 2 * n2) if n1 + 2 * n2 else 0.5
            self.d = (float(disc),) * 3

    @staticmethod
    def _find(sorted_keys: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(sorted_keys) == 0:
            return np.zeros(len(query), dtype=np.int64), np.zeros(len(query), dtype=bool)
        pos = np.searchsorted(sorted_keys, query).clip(0, len(sorted_keys) - 1)
        return pos, sorted_keys[pos] == query

    def count(self, keys: np.ndarray) -> np.ndarray:
        pos, hit = self._find(self.keys, keys)
        return np.where(hit, self.counts[pos], 0.0)

    def context(self, ctx: np.ndarray):
        pos, hit = self._find(self.ctx, ctx)

        def pick(a):
            return np.where(hit, a[pos], 0.0)

        return pick(self.total), pick(self.n1), pick(self.n2), pick(self.n3)

    def discount(self, c: np.ndarray) -> np.ndarray:
        d1, d2, d3 = self.d
        return np.select([c >= 3, c == 2, c == 1], [d3, d2, d1], 0.0)


class KneserNey:
    def __init__(self, train_ids: np.ndarray, vocab: int, order: int = 3, discount="modified", floor: bool = True):
        if order < 1:
            raise ValueError("order must be >= 1")
        self.vocab, self.order, self.floor = vocab, order, floor
        self.levels: list[_Level] = []
        for k in range(1, order + 1):
            if k == order:  # the highest order: raw counts
                keys, counts = np.unique(gram_keys(train_ids, k, vocab), return_counts=True)
            else:  # continuation counts: distinct left extensions of each k-gram
                longer = np.unique(gram_keys(train_ids, k + 1, vocab))
                keys, counts = np.unique(longer % (vocab**k), return_counts=True)
            self.levels.append(_Level(keys, counts, vocab, discount))

    def probs(self, ids: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """p(ids[t] | the order−1 tokens before t in ids) for every t in targets."""
        ids = ids.astype(np.int64)
        t = np.asarray(targets, dtype=np.int64)
        w = ids[t]
        p = np.full(len(t), 1.0 / self.vocab)
        hist = np.zeros(len(t), dtype=np.int64)  # the context key, grown one token to the left per order
        for k, level in enumerate(self.levels, start=1):
            if k == 1:
                c = level.count(w)
                total, n1, n2, n3 = (
                    np.full(len(t), a[0] if len(a) else 0.0) for a in (level.total, level.n1, level.n2, level.n3)
                )
                if not self.floor:
                    p = np.where(total > 0, c / np.maximum(total, 1e-300), 0.0)
                    continue
                valid = np.ones(len(t), dtype=bool)
            else:
                valid = t >= k - 1
                prev = ids[np.maximum(t - (k - 1), 0)]
                hist = hist + prev * self.vocab ** (k - 2)
                total, n1, n2, n3 = level.context(hist)
                c = level.count(hist * self.vocab + w)
            d1, d2, d3 = level.d
            seen = valid & (total > 0)
            safe = np.where(seen, total, 1.0)
            gamma = (d1 * n1 + d2 * n2 + d3 * n3) / safe
            mixed = np.maximum(c - level.discount(c), 0.0) / safe + gamma * p
            p = np.where(seen, mixed, p)
        return p

    def distribution(self, context: list[int]) -> np.ndarray:
        """p(· | context) over the whole vocabulary (for the sums-to-one checks; small vocabularies)."""
        ctx = list(context)[len(context) - (self.order - 1) :] if self.order > 1 else []
        return np.array([self.probs(np.array(ctx + [w]), np.array([len(ctx)]))[0] for w in range(self.vocab)])


def kn_baselines(tok, context: int, eval_tokens: int | None, orders=(3, 4)) -> dict:
    """Interpolated modified KN figures on the LMs' validation and test targets of a TokenizedCorpus.

    Returns {"models": {"kn3": {"val_loss","test_loss","val_ppl","test_ppl","val_bpb","test_bpb"}, ...},
             "bytes": {"valid","test"}, "targets": {"valid","test"}, "discounts": {"kn3": [[D1,D2,D3+] per order]}}.
    """
    from rag.lm.baselines import eval_targets, token_bytes
    from rag.lm.data import load_tokenizer

    nb = token_bytes(load_tokenizer(tok.tokenizer_path))
    tv = eval_targets(len(tok.ids["valid"]), context, eval_tokens)
    tt = eval_targets(len(tok.ids["test"]), context, eval_tokens)
    bytes_v = int(nb[tok.ids["valid"][tv].astype(np.int64)].sum())
    bytes_t = int(nb[tok.ids["test"][tt].astype(np.int64)].sum())
    models, disc = {}, {}
    for n in orders:
        model = KneserNey(tok.ids["train"], tok.vocab, n)
        val = float(-np.log(model.probs(tok.ids["valid"], tv)).mean())
        test = float(-np.log(model.probs(tok.ids["test"], tt)).mean())
        models[f"kn{n}"] = {
            "val_loss": round(val, 4),
            "test_loss": round(test, 4),
            "val_ppl": round(math.exp(val), 2),
            "test_ppl": round(math.exp(test), 2),
            "val_bpb": round(val * len(tv) / math.log(2) / bytes_v, 4),
            "test_bpb": round(test * len(tt) / math.log(2) / bytes_t, 4),
        }
        disc[f"kn{n}"] = [[round(x, 4) for x in level.d] for level in model.levels]
    return {
        "models": models,
        "bytes": {"valid": bytes_v, "test": bytes_t},
        "targets": {"valid": len(tv), "test": len(tt)},
        "discounts": disc,
        "method": "interpolated modified Kneser-Ney (Chen & Goodman), discounts per order from count-of-counts, "
        "uniform floor 1/V, counts from the train split",
    }


def kn_lines(res: dict) -> list[str]:
    return [
        f"{name}: val {m['val_bpb']:.4f} bpb (ppl {m['val_ppl']:.1f}), test {m['test_bpb']:.4f} bpb "
        f"(ppl {m['test_ppl']:.1f}); discounts per order {res['discounts'][name]}"
        for name, m in res["models"].items()
    ]


def grid_baselines(settings, out, orders) -> dict:
    """KN (and the old additive) baselines on a grid's evaluation targets, cached in out/baselines.json."""
    import json

    from rag.lm.baselines import baselines
    from rag.lm.data import prepare

    path = out / "baselines.json"
    key = {
        "corpus": settings.corpus,
        "vocab": settings.vocab,
        "context": settings.context,
        "eval_tokens": settings.eval_tokens,
        "orders": list(orders),
    }
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            return saved
    tok = prepare(settings.corpus, settings.vocab)
    res = kn_baselines(tok, settings.context, settings.eval_tokens, orders)
    old = baselines(tok, settings.context, settings.eval_tokens)
    res["models"] = {**{k: v for k, v in old["models"].items()}, **res["models"]}
    res["key"] = key
    path.write_text(json.dumps(res, indent=1))
    return res
