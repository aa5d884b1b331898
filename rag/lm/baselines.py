"""Simple count baselines on the same BPE tokens as the transformers: add-1/2 unigram, and bigram and trigram
interpolated with one additive constant per order (Dirichlet-prior smoothing: the weight of the lower order is
k/(c(context)+k), the same k for every context). This is not Witten-Bell (which would set k per context to the
number of distinct followers) and not Kneser-Ney; the strong baselines are the modified Kneser-Ney models of
rag.lm.kn.

Fitted on the train split only:
    p1(w)       = (c(w) + 0.5) / (N + 0.5 V)
    p2(w | v)   = (c(v,w) + k2 p1(w)) / (c(v) + k2)
    p3(w | u,v) = (c(u,v,w) + k3 p2(w | v)) / (c(u,v) + k3)
k2 and k3 are chosen on the validation targets from a grid; the test split is then scored once.
Scored targets are exactly the transformers' (`eval_targets`): the first n*T positions after the first
token of a split; a count model sees the one or two tokens before each target.
Bits per byte divide the total bits by the UTF-8 bytes those target tokens decode to (byte-level BPE:
one vocabulary character is one byte), so they are comparable across tokenizers.
"""

from __future__ import annotations

import math

import numpy as np

GRID = tuple(round(10 ** (e / 4), 3) for e in range(-4, 17))  # 0.1 .. 10000, 4 per decade


def eval_targets(n_ids: int, context: int, max_tokens: int | None) -> np.ndarray:
    """Positions of the targets the transformer's evaluation scores (see data.eval_batches)."""
    n = (n_ids - 1) // context
    if max_tokens:
        n = min(n, max(1, max_tokens // context))
    return np.arange(1, n * context + 1)


def token_bytes(tokenizer) -> np.ndarray:
    """UTF-8 byte length of every token id (byte-level BPE: one vocabulary character per byte; specials 0)."""
    vocab = tokenizer.get_vocab()
    out = np.zeros(max(vocab.values()) + 1, dtype=np.int64)
    for piece, i in vocab.items():
        out[i] = 0 if piece.startswith("<|") and piece.endswith("|>") else len(piece)
    return out


def _keys(ids: np.ndarray, order: int, vocab: int) -> np.ndarray:
    """int64 key of every n-gram (order 1..3) ending at position order-1.. of ids."""
    ids = ids.astype(np.int64)
    if order == 1:
        return ids
    if order == 2:
        return ids[:-1] * vocab + ids[1:]
    return (ids[:-2] * vocab + ids[1:-1]) * vocab + ids[2:]


class Counts:
    """Sorted unique keys and their counts; lookup of many keys at once."""

    def __init__(self, keys: np.ndarray):
        self.keys, self.counts = np.unique(keys, return_counts=True)

    def get(self, query: np.ndarray) -> np.ndarray:
        if len(self.keys) == 0:
            return np.zeros(len(query), dtype=np.float64)
        pos = np.searchsorted(self.keys, query).clip(0, len(self.keys) - 1)
        return np.where(self.keys[pos] == query, self.counts[pos], 0).astype(np.float64)


class NGramBaselines:
    def __init__(self, train_ids: np.ndarray, vocab: int):
        self.vocab = vocab
        uni = np.bincount(train_ids.astype(np.int64), minlength=vocab).astype(np.float64)
        self.p1 = (uni + 0.5) / (uni.sum() + 0.5 * vocab)
        self.c1 = Counts(_keys(train_ids[:-1], 1, vocab))  # contexts of bigrams
        self.c2 = Counts(_keys(train_ids, 2, vocab))
        self.c2ctx = Counts(_keys(train_ids[:-1], 2, vocab))  # contexts of trigrams
        self.c3 = Counts(_keys(train_ids, 3, vocab))
        self.k2, self.k3 = 1.0, 1.0

    def _parts(self, ids: np.ndarray, targets: np.ndarray):
        ids = ids.astype(np.int64)
        V = self.vocab
        w, v = ids[targets], ids[targets - 1]
        u = ids[np.maximum(targets - 2, 0)]
        has_u = targets >= 2
        return (
            self.p1[w],
            self.c1.get(v),
            self.c2.get(v * V + w),
            self.c2ctx.get(u * V + v),
            self.c3.get((u * V + v) * V + w),
            has_u,
        )

    @staticmethod
    def _p2(parts, k2):
        p1, cv, cvw = parts[:3]
        return (cvw + k2 * p1) / (cv + k2)

    @staticmethod
    def _p3(parts, k2, k3):
        p2 = NGramBaselines._p2(parts, k2)
        cuv, cuvw, has_u = parts[3:]
        return np.where(has_u, (cuvw + k3 * p2) / (cuv + k3), p2)

    def bigram_probs(self, v: int) -> np.ndarray:
        """p2(. | v) over the whole vocabulary."""
        w = np.arange(self.vocab)
        parts = (self.p1, np.full(self.vocab, self.c1.get(np.array([v]))[0]), self.c2.get(v * self.vocab + w))
        return self._p2(parts, self.k2)

    def trigram_probs(self, u: int, v: int) -> np.ndarray:
        """p3(. | u, v) over the whole vocabulary."""
        V, w = self.vocab, np.arange(self.vocab)
        parts = (
            self.p1,
            np.full(V, self.c1.get(np.array([v]))[0]),
            self.c2.get(v * V + w),
            np.full(V, self.c2ctx.get(np.array([u * V + v]))[0]),
            self.c3.get((u * V + v) * V + w),
            np.ones(V, dtype=bool),
        )
        return self._p3(parts, self.k2, self.k3)

    def tune(self, valid_ids: np.ndarray, targets: np.ndarray) -> None:
        parts = self._parts(valid_ids, targets)
        self.k2 = min(GRID, key=lambda k: -np.log(self._p2(parts, k)).mean())
        self.k3 = min(GRID, key=lambda k: -np.log(self._p3(parts, self.k2, k)).mean())

    def nats(self, ids: np.ndarray, targets: np.ndarray) -> dict[str, float]:
        """Mean nats per target token of each model."""
        parts = self._parts(ids, targets)
        return {
            "unigram": float(-np.log(parts[0]).mean()),
            "bigram": float(-np.log(self._p2(parts, self.k2)).mean()),
            "trigram": float(-np.log(self._p3(parts, self.k2, self.k3)).mean()),
        }


def baselines(tok, context: int, eval_tokens: int | None) -> dict:
    """Unigram/bigram/trigram figures on the transformers' validation and test targets of a TokenizedCorpus.

    Returns {"models": {name: {"val_ppl", "test_ppl", "val_bpb", "test_bpb", "val_loss", "test_loss"}},
             "bytes": {"valid", "test"}, "targets": {"valid", "test"}, "k2", "k3"}.
    """
    from rag.lm.data import load_tokenizer

    nb = token_bytes(load_tokenizer(tok.tokenizer_path))
    model = NGramBaselines(tok.ids["train"], tok.vocab)
    tv = eval_targets(len(tok.ids["valid"]), context, eval_tokens)
    tt = eval_targets(len(tok.ids["test"]), context, eval_tokens)
    model.tune(tok.ids["valid"], tv)
    val, test = model.nats(tok.ids["valid"], tv), model.nats(tok.ids["test"], tt)
    bytes_v = int(nb[tok.ids["valid"][tv].astype(np.int64)].sum())
    bytes_t = int(nb[tok.ids["test"][tt].astype(np.int64)].sum())
    models = {}
    for name in val:
        models[name] = {
            "val_loss": round(val[name], 4),
            "test_loss": round(test[name], 4),
            "val_ppl": round(math.exp(val[name]), 2),
            "test_ppl": round(math.exp(test[name]), 2),
            "val_bpb": round(val[name] * len(tv) / math.log(2) / bytes_v, 4),
            "test_bpb": round(test[name] * len(tt) / math.log(2) / bytes_t, 4),
        }
    return {
        "models": models,
        "bytes": {"valid": bytes_v, "test": bytes_t},
        "targets": {"valid": int(len(tv)), "test": int(len(tt))},
        "k2": model.k2,
        "k3": model.k3,
    }
