"""The index store: corpus → encoder → reducer → FAISS index → indexes/<corpus>/<name>/, and back.

A stored index holds index.faiss, reducer.npz, encoder_state.npz (if the encoder has state, e.g. IDF weights),
passages.jsonl (what search results show) and manifest.json. Loading refuses an index whose corpus content,
encoder, d, reducer or kind differs from what is asked, printing the command that rebuilds it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag import __version__
from rag.config import RagError, valid_choice
from rag.corpus import Corpus, Passage
from rag.encoders import (REDUCERS, Reducer, cached_embeddings, check_encoder_name, embed_corpus, encoder_width,
                          get_encoder)
from rag.index import (INDEX_KINDS, IndexCorrupt, IndexMismatch, IndexMissing, SearchIndex, build_index,
                       index_name, index_path, read_manifest, rebuild_command, verify_checksums, write_index_dir)


@dataclass
class LoadedIndex:
    manifest: dict
    path: Path  # the resolved version folder
    index: SearchIndex
    reducer: Reducer
    passages: list[Passage]
    encoder_state: dict


def check_options(encoder: str, dim: int | None, kind: str, reduce: str) -> int:
    """Validate the options and return d (default: the encoder's full width)."""
    check_encoder_name(encoder)
    valid_choice(kind, INDEX_KINDS, "index kind")
    valid_choice(reduce, REDUCERS, "reducer")
    width = encoder_width(encoder)
    dim = width if dim is None else dim
    if not 1 <= dim <= width:
        raise RagError(f"--dim {dim} is out of range for encoder {encoder}; choose 1..{width}")
    return dim


def build_and_save(corpus: Corpus, encoder_name: str = "minilm", dim: int | None = None, kind: str = "flat",
                   reduce: str = "pca", progress=None) -> dict:
    """Encode (or reuse cached vectors), reduce to d, build the FAISS index and store it atomically."""
    dim = check_options(encoder_name, dim, kind, reduce)
    cached = cached_embeddings(corpus, encoder_name)  # a hit needs no model at all
    if cached:
        vectors, state = cached
    else:
        encoder = get_encoder(encoder_name)
        vectors = embed_corpus(corpus, encoder, progress=progress)
        state = encoder.get_state() if hasattr(encoder, "get_state") else {}
    reducer = Reducer.fit(vectors, dim, reduce)
    start = time.perf_counter()
    index = build_index(reducer.transform(vectors), kind)
    build_s = time.perf_counter() - start

    def write_extra(folder: Path) -> None:
        reducer.save(folder)
        if state:
            np.savez(folder / "encoder_state.npz", **state)
        with open(folder / "passages.jsonl", "w", encoding="utf-8") as f:
            for p in corpus.passages:
                f.write(json.dumps({"id": p.id, "title": p.title, "source": p.source, "text": p.text}) + "\n")

    data = index.serialize()
    manifest = {
        "corpus": corpus.name, "corpus_safe_name": corpus.safe_name, "corpus_hash": corpus.content_hash,
        "encoder": encoder_name, "dim": dim, "reduce": reduce, "kind": kind, "metric": "inner_product",
        "vectors": len(index), "index_bytes": len(data), "bytes_per_vector": len(data) / max(1, len(index)),
        "build_s": round(build_s, 4), "device": index.device, "rag_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    target = index_path(corpus.safe_name, index_name(encoder_name, dim, kind, reduce))
    final = write_index_dir(target, {"index.faiss": data}, write_extra, manifest)
    return {**read_manifest(final), "path": str(target)}


def load_index(corpus: Corpus, encoder_name: str = "minilm", dim: int | None = None, kind: str = "flat",
               reduce: str = "pca") -> LoadedIndex:
    """Load the stored index for these options, refusing one built from anything else."""
    dim = check_options(encoder_name, dim, kind, reduce)
    rebuild = rebuild_command(corpus.name, encoder_name, dim, kind, reduce)
    link = index_path(corpus.safe_name, index_name(encoder_name, dim, kind, reduce))
    if not link.exists():
        raise IndexMissing(f"no index for these options at {link}; build it with: {rebuild}")
    return load_index_dir(link, expect={"corpus_hash": corpus.content_hash, "encoder": encoder_name, "dim": dim,
                                        "kind": kind, "reduce": reduce}, rebuild=rebuild)


def load_index_dir(path: Path, expect: dict | None = None, rebuild: str | None = None) -> LoadedIndex:
    """Load one index folder: check the manifest against `expect`, verify checksums, read everything."""
    real = Path(path).resolve()
    manifest = read_manifest(real)
    rebuild = rebuild or rebuild_command(manifest.get("corpus", "?"), manifest.get("encoder", "?"),
                                         manifest.get("dim", 0), manifest.get("kind", "?"), manifest.get("reduce", "pca"))
    for key, want in (expect or {}).items():
        if manifest.get(key) != want:
            what = "corpus content" if key == "corpus_hash" else key
            raise IndexMismatch(f"the index at {path} was built with another {what} "
                                f"({str(manifest.get(key))[:16]} ≠ {str(want)[:16]}); rebuild it with: {rebuild}")
    verify_checksums(real, manifest, rebuild)
    try:
        index = SearchIndex.read(manifest["kind"], real / "index.faiss", manifest["dim"], binary_rescore=200)
        reducer = Reducer.load(real)
        state = dict(np.load(real / "encoder_state.npz")) if (real / "encoder_state.npz").exists() else {}
        with open(real / "passages.jsonl", encoding="utf-8") as f:
            passages = [Passage(**json.loads(line)) for line in f]
    except (RuntimeError, ValueError, KeyError, OSError) as e:
        raise IndexCorrupt(f"the index at {path} cannot be read ({e}); rebuild it with: {rebuild}") from e
    return LoadedIndex(manifest, real, index, reducer, passages, state)


__all__ = ["LoadedIndex", "build_and_save", "load_index", "load_index_dir", "check_options",
           "IndexMissing", "IndexMismatch", "IndexCorrupt"]
