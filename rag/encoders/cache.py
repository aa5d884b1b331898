"""The embedding cache: full-width document vectors, encoded once per (corpus content, encoder).

A sweep over d never encodes again: reducers derive every lower d from these vectors. Encoding runs in parts of
512 documents, each saved atomically, so a killed run resumes from the last finished part.

A cached file that cannot be read, has the wrong shape, or holds NaN/Inf is discarded with a RagNote and
encoded again. Before a long encode, the rate measured on the first documents gives an estimate; one over
ESTIMATE_WARN_S is announced (a RagNote) before the rest is encoded.

Beside the per-corpus files sits a per-passage cache for encoders without corpus statistics (MiniLM): vectors keyed
by the sha256 of the text the encoder reads, in `embeddings/by-passage/<encoder>/pack-*.npz`. A corpus that gained
one file encodes only that file's passages. (IDF-weighted encoders change every vector when the corpus changes, so
they keep the per-corpus cache alone.)
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np

from rag.config import RagNote, atomic_write, cache_dir
from rag.encoders.base import Encoder, ProgressFn, document_text

ESTIMATE_WARN_S = 60.0  # announce an encode estimated to take longer than about a minute
PROBE_DOCS = 32  # documents timed for the estimate (their vectors are kept)


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


def discard(path: Path, why: str) -> None:
    warnings.warn(f"embedding cache {path} {why}; discarded, encoding again", RagNote, stacklevel=3)
    path.unlink(missing_ok=True)


def load_vectors(path: Path, rows: int, width: int | None = None) -> np.ndarray | None:
    """A cached [rows, width] float matrix of finite numbers, or None (and the file discarded, with a warning)."""
    if not path.exists():
        return None
    try:
        vectors = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        return discard(path, f"cannot be read ({type(e).__name__}: {str(e)[:80]})")
    if vectors.ndim != 2 or vectors.dtype.kind != "f" or (width and vectors.shape[1] != width):
        return discard(path, f"holds a {vectors.dtype} array of shape {vectors.shape}, not [n, {width or 'd'}] floats")
    if len(vectors) != rows:
        return None  # another corpus's cut (e.g. a part of another length): not an error, just not ours
    if not np.isfinite(vectors).all():
        return discard(path, "holds NaN or infinite values")
    return vectors.astype(np.float32, copy=False)


def load_state(path: Path) -> dict | None:
    """Cached encoder state (IDF weights ...), or None (a damaged file is discarded, with a warning)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            state = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
        return discard(path, f"cannot be read ({type(e).__name__})")
    if not all(np.isfinite(v).all() for v in state.values() if v.dtype.kind == "f"):
        return discard(path, "holds NaN or infinite values")
    return state


def cached_embeddings(corpus, encoder_name: str, width: int | None = None) -> tuple[np.ndarray, dict] | None:
    """(full-width vectors, encoder state) from the cache, or None; loads no model. width: the encoder's, if known."""
    folder = embedding_cache_dir(corpus, encoder_name)
    vectors = load_vectors(folder / "vectors.npy", len(corpus.passages), width)
    if vectors is None:
        return passage_cache_hit(corpus, encoder_name, width)
    state = load_state(folder / "encoder_state.npz")
    if state is None and (folder / "encoder_state.npz").exists():
        return None
    return vectors, state or {}


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
    state = load_state(folder / "encoder_state.npz")
    if state is not None:
        encoder.set_state(state)
    else:
        encoder.fit(texts)
        save_npz(folder / "encoder_state.npz", encoder.get_state())


def encode_checked(encoder: Encoder, texts: list[str], progress) -> np.ndarray:
    vectors = np.asarray(encoder.encode(texts, kind="document", progress=progress), dtype=np.float32)
    if not np.isfinite(vectors).all():
        from rag.config import RagError

        raise RagError(
            f"encoder {encoder.name} produced NaN or infinite vectors; check the encoder "
            "(a damaged checkpoint?) before building"
        )
    return vectors


def announce_estimate(encoder: Encoder, seconds: float, probed: int, remaining: int) -> None:
    """Warn before a long encode, with the rate measured just now on `probed` documents."""
    estimate = seconds / max(probed, 1) * remaining
    if estimate > ESTIMATE_WARN_S:
        warnings.warn(
            f"encoding {remaining:,} passages with {encoder.name} will take about {max(1, round(estimate / 60))} "
            f"minute(s) here ({probed / max(seconds, 1e-9):.1f} passages/s measured on the first {probed}); "
            "a smaller corpus or a table encoder is faster",
            RagNote,
            stacklevel=3,
        )


# ---------------------------------------------------------------- the per-passage cache


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def passage_cache_dir(encoder_name: str) -> Path:
    return cache_dir() / "embeddings" / "by-passage" / slug(encoder_name)


def load_passage_vectors(encoder_name: str, keys: set[str], width: int | None = None) -> dict[str, np.ndarray]:
    """The cached vectors of those text keys that an earlier build encoded with this encoder (damaged packs are
    discarded with a warning, like every other cache file)."""
    found: dict[str, np.ndarray] = {}
    for pack in sorted(passage_cache_dir(encoder_name).glob("pack-*.npz")) if keys else []:
        try:
            with np.load(pack, allow_pickle=False) as z:
                pack_keys, vectors = z["keys"].tolist(), z["vectors"]
        except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as e:
            discard(pack, f"cannot be read ({type(e).__name__})")
            continue
        if (
            vectors.ndim != 2
            or len(vectors) != len(pack_keys)
            or (width and vectors.shape[1] != width)
            or not np.isfinite(vectors).all()
        ):
            discard(
                pack, f"holds a {vectors.dtype} array of shape {vectors.shape} for {len(pack_keys)} keys, or NaN/Inf"
            )
            continue
        rows = [i for i, k in enumerate(pack_keys) if k in keys and k not in found]
        found.update((pack_keys[i], vectors[i]) for i in rows)
    return found


def save_passage_vectors(encoder_name: str, keys: list[str], vectors: np.ndarray) -> None:
    folder = passage_cache_dir(encoder_name)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{time.monotonic_ns()}"
    save_npz(folder / f"pack-{stamp}.npz", {"keys": np.array(keys), "vectors": vectors.astype(np.float32)})


def passage_cache_hit(corpus, encoder_name: str, width: int | None = None) -> tuple[np.ndarray, dict] | None:
    """Every passage's vector from the per-passage cache (written only by stateless encoders), or None."""
    keys = [text_key(document_text(p)) for p in corpus.passages]
    found = load_passage_vectors(encoder_name, set(keys), width)
    if not keys or len(found) < len(set(keys)):
        return None
    return np.stack([found[k] for k in keys]).astype(np.float32), {}


def embed_corpus(corpus, encoder: Encoder, progress: ProgressFn | None = None, part_size: int = 512) -> np.ndarray:
    """Full-width document vectors of the corpus, cached. Encodes in parts so that a killed run resumes."""
    return embed_corpus_counted(corpus, encoder, progress, part_size)[0]


def embed_corpus_counted(
    corpus, encoder: Encoder, progress: ProgressFn | None = None, part_size: int = 512
) -> tuple[np.ndarray, int]:
    """(full-width vectors, how many passages were encoded now); the others came from the caches."""
    folder = embedding_cache_dir(corpus, encoder.name)
    folder.mkdir(parents=True, exist_ok=True)
    texts = [document_text(p) for p in corpus.passages]
    stateless = not hasattr(encoder, "fit")
    if not stateless:
        fit_state(folder, encoder, texts)
    final = folder / "vectors.npy"
    vectors = load_vectors(final, len(texts), encoder.dim)
    if vectors is not None:
        return vectors, 0
    keys = [text_key(t) for t in texts] if stateless else [str(j) for j in range(len(texts))]
    known = load_passage_vectors(encoder.name, set(keys), encoder.dim) if stateless else {}
    parts, probed, encoded = [], False, 0
    for i, start in enumerate(range(0, len(texts), part_size)):
        part = folder / f"part-{i:05d}.npy"
        chunk = texts[start : start + part_size]
        vec = load_vectors(part, len(chunk), encoder.dim)
        if vec is None:

            def part_progress(n, _total, done=start):
                if progress:
                    progress(done + n, len(texts))

            todo = [start + j for j in range(len(chunk)) if keys[start + j] not in known]
            fresh, pieces = [texts[j] for j in todo], []
            if not probed and len(fresh) > PROBE_DOCS:  # time the first documents, then say how long
                probed, t0 = True, time.perf_counter()
                pieces.append(encode_checked(encoder, fresh[:PROBE_DOCS], None))
                remaining = sum(k not in known for k in keys[start:]) - PROBE_DOCS
                announce_estimate(encoder, time.perf_counter() - t0, PROBE_DOCS, remaining)
            done = sum(len(p) for p in pieces)
            if done < len(fresh):
                pieces.append(
                    encode_checked(encoder, fresh[done:], lambda n, t, s=start + done: part_progress(n, t, s))
                )
            if fresh:
                new = np.concatenate(pieces)
                encoded += len(fresh)
                if stateless:
                    save_passage_vectors(encoder.name, [keys[j] for j in todo], new)
                known.update(zip((keys[j] for j in todo), new))
            vec = np.stack([known[keys[start + j]] for j in range(len(chunk))]).astype(np.float32)
            save_npy(part, vec)
        parts.append(vec)
        if progress:
            progress(min(start + part_size, len(texts)), len(texts))
    vectors = np.concatenate(parts).astype(np.float32) if parts else np.zeros((0, encoder.dim), np.float32)
    save_npy(final, vectors)
    for part in folder.glob("part-*.npy"):
        part.unlink(missing_ok=True)  # a concurrent update of the same corpus may have removed it already
    return vectors, encoded
