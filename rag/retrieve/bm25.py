"""BM25 over passages (bm25s, English stopwords, title + text), cached on disk per corpus content hash."""

from __future__ import annotations

import os
import shutil

import numpy as np

from rag.config import bm25_cache_dir, quiet_libraries
from rag.data.corpus import Corpus, Passage
from rag.retrieve.settings import CANDIDATES

PARAMS_FILE = "params.index.json"  # what bm25s saves first; a cache folder holding it is a whole BM25 index


def bm25_key(content_hash: str) -> str:
    """The BM25 cache key of a corpus's content."""
    return content_hash[:16]


def bm25_stored(content_hash: str) -> bool:
    """True when the BM25 index of this corpus content is cached on disk."""
    return (bm25_cache_dir(bm25_key(content_hash)) / PARAMS_FILE).exists()


class BM25:
    """BM25 over passages (bm25s, English stopwords, title + text), cached per corpus content hash."""

    def __init__(self, passages: list[Passage], cache_key: str | None = None):
        import bm25s
        from bm25s.tokenization import Tokenizer

        quiet_libraries()  # its DEBUG lines showed on a root logger another library had set to DEBUG

        self.ids = [p.id for p in passages]
        folder = bm25_cache_dir(cache_key) if cache_key else None
        self.tokenizer = Tokenizer(stopwords="en")
        if folder and (folder / PARAMS_FILE).exists():
            self.model = bm25s.BM25.load(folder, show_progress=False)
            self.tokenizer.load_vocab(folder)
            return
        texts = [f"{p.title} {p.text}" for p in passages]
        tokens = self.tokenizer.tokenize(texts, return_as="tuple", show_progress=False)
        self.model = bm25s.BM25()
        self.model.index(tokens, show_progress=False)
        if folder:
            tmp = folder.with_name(f"{folder.name}.tmp-{os.getpid()}")
            tmp.mkdir(parents=True, exist_ok=True)
            self.model.save(tmp, show_progress=False)
            self.tokenizer.save_vocab(tmp)
            try:
                tmp.rename(folder)
            except OSError:  # another process saved it first
                shutil.rmtree(tmp, ignore_errors=True)

    @classmethod
    def for_corpus(cls, corpus: Corpus) -> "BM25":
        """BM25 over a corpus's passages, read from (or saved to) the cache of its content."""
        return cls(corpus.passages, cache_key=bm25_key(corpus.content_hash))

    def search(self, queries: list[str], k: int = CANDIDATES) -> list[dict[str, float]]:
        k = min(k, len(self.ids))
        tokens = self.tokenizer.tokenize(queries, update_vocab=False, return_as="tuple", show_progress=False)
        docs, scores = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [{self.ids[d]: float(s) for d, s in zip(row_d, row_s) if s > 0} for row_d, row_s in zip(docs, scores)]

    def full_scores(self, texts: list[str]) -> np.ndarray:
        """BM25 scores of every passage for each text [n_texts, n_passages] (bm25s get_scores, same tokenizer)."""
        tokens = self.tokenizer.tokenize(texts, update_vocab=False, return_as="string", show_progress=False)
        out = np.zeros((len(texts), len(self.ids)), np.float32)
        for i, t in enumerate(tokens):
            if t:
                out[i] = self.model.get_scores(list(t))
        return out
