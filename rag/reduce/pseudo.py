"""Pseudo-queries: short, query-like texts cut from the corpus's own documents (no labels needed).

Each picked document gives one text, in turn its title, its first sentence, or a random span of 6–16 words.
They train and check the learned reducers (rag.reduce.distill) and stand in for real queries in `rag advise`
when there are no qrels. Their vectors are cached beside the corpus's embeddings.
"""

from __future__ import annotations

import re

import numpy as np

from rag.encoders import get_encoder
from rag.encoders.cache import embedding_cache_dir, save_npy, with_state

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
MAX_WORDS = 32


def picked_documents(n_docs: int, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).choice(n_docs, size=min(n, n_docs), replace=False)


def pseudo_query_texts(passages, n: int, seed: int = 0, avoid: np.ndarray | None = None) -> list[str]:
    """n texts (at most one per document) from documents picked at random with `seed`, none of them in `avoid`
    (while enough others are left: held-out pseudo-queries avoid the documents that trained a reducer)."""
    rng = np.random.default_rng(seed)
    pool = np.arange(len(passages))
    if avoid is not None and len(passages) - len(avoid) >= min(n, len(passages)):
        pool = np.setdiff1d(pool, avoid)
    picks = rng.choice(pool, size=min(n, len(pool)), replace=False)
    out = []
    for j, i in enumerate(picks):
        p = passages[int(i)]
        words = p.text.split()
        style = j % 3
        if style == 0 and p.title.strip():
            text = p.title.strip()
        elif style == 1 or len(words) < 8:
            text = " ".join(SENTENCE_END.split(p.text.strip(), maxsplit=1)[0].split()[:MAX_WORDS])
        else:
            length = int(rng.integers(6, 17))
            start = int(rng.integers(0, max(1, len(words) - length)))
            text = " ".join(words[start : start + length])
        out.append(text or p.title or p.id)
    return out


TRAIN_N = 600  # pseudo-queries that train a reducer (seed 0); held-out ones avoid their documents


def pseudo_query_vectors(
    corpus, encoder, n: int = TRAIN_N, seed: int = 0, state: dict | None = None, held_out: bool = False
) -> np.ndarray:
    """Full-width vectors of n pseudo-queries (encoded as queries), cached per corpus, encoder, n and seed.

    `encoder` is an Encoder or a registry name; a name loads the model only when the vectors are not cached.
    held_out: drawn from documents that the training pseudo-queries (TRAIN_N, seed 0) did not use.
    """
    name = encoder if isinstance(encoder, str) else encoder.name
    tag = "-heldout" if held_out else ""
    path = embedding_cache_dir(corpus, name) / f"pseudo-queries-n{n}-s{seed}{tag}.npy"
    if path.exists():
        return np.load(path)
    if isinstance(encoder, str):
        encoder = with_state(get_encoder(encoder), state or {})
    avoid = picked_documents(len(corpus.passages), TRAIN_N, 0) if held_out else None
    texts = pseudo_query_texts(corpus.passages, n, seed, avoid)
    vectors = encoder.encode(texts, kind="query").astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_npy(path, vectors)
    return vectors
