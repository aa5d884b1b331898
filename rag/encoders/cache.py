"""The embedding cache: full-width document vectors, encoded once per (corpus content, encoder).

A sweep over d never encodes again: reducers derive every lower d from these vectors. Encoding runs in parts of
512 documents, each saved atomically, so a killed run resumes from the last finished part.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np

from rag.config import atomic_write, cache_dir
from rag.encoders.base import Encoder, ProgressFn, document_text


def slug(name: str) -> str:
    """A file-name-safe form of an encoder name (lm:/runs/d256 → lm_runs_d256)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")[:80]


def embedding_cache_dir(corpus, encoder_name: str) -> Path:
    return cache_dir() / "embeddings" / f"{corpus.content_hash[:16]}-{slug(encoder_name)}"


def save_npy(path: Path, array: np.ndarray) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.save(f, array)

    atomic_write(path, write)


def save_npz(path: Path, arrays: dict) -> None:
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)

    atomic_write(path, write)


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


def fit_state(folder: Path, encoder: Encoder, texts: list[str]) -> None:
    """Fit the encoder's corpus statistics (IDF, whitening) once; reuse the cached ones afterwards."""
    state_file = folder / "encoder_state.npz"
    if state_file.exists():
        encoder.set_state(dict(np.load(state_file)))
    else:
        encoder.fit(texts)
        save_npz(state_file, encoder.get_state())


def embed_corpus(corpus, encoder: Encoder, progress: ProgressFn | None = None, part_size: int = 512) -> np.ndarray:
    """Full-width document vectors of the corpus, cached. Encodes in parts so that a killed run resumes."""
    folder = embedding_cache_dir(corpus, encoder.name)
    folder.mkdir(parents=True, exist_ok=True)
    texts = [document_text(p) for p in corpus.passages]
    if hasattr(encoder, "fit"):
        fit_state(folder, encoder, texts)
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
            def part_progress(n, _total, done=start):
                if progress:
                    progress(done + n, len(texts))

            vec = encoder.encode(texts[start:start + part_size], kind="document", progress=part_progress)
            save_npy(part, vec.astype(np.float32))
            parts.append(vec)
        if progress:
            progress(min(start + part_size, len(texts)), len(texts))
    vectors = np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, encoder.dim), np.float32)
    save_npy(final, vectors)
    for part in folder.glob("part-*.npy"):
        part.unlink()
    return vectors
