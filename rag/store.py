"""The index store on disk: corpus → encoder → reducer → FAISS index → indexes/<corpus>/<name>/, and back.

A stored index holds index.faiss, reducer.npz, encoder_state.npz (if the encoder has state, e.g. IDF weights),
passages.jsonl (what search results show) and manifest.json. Loading refuses an index whose corpus content,
encoder, d, reducer or kind differs from what is asked, printing the command that rebuilds it.

indexes/<corpus>/<name> is a symlink to indexes/<corpus>/.versions/<name>-<stamp>/. A build writes a new version
in a temporary folder, fsyncs it, renames it, then swaps the symlink atomically: a reader sees the old index or
the new one, and a killed build leaves the old one whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag import __version__
from rag.config import RagError, index_dir, valid_choice
from rag.corpus import Corpus, Passage
from rag.encoders import check_encoder_name, encoder_width, get_encoder
from rag.encoders.cache import cached_embeddings, embed_corpus, slug
from rag.index import INDEX_KINDS, SearchIndex, build_index
from rag.reduce import REDUCERS, Reducer

MANIFEST = "manifest.json"


class IndexMissing(RagError):
    pass


class IndexMismatch(RagError):
    pass


class IndexCorrupt(RagError):
    pass


# ---------------------------------------------------------------- names and versions


def index_name(encoder: str, dim: int, kind: str, reduce: str = "pca") -> str:
    return f"{slug(encoder)}-d{dim}-{kind}" + ("" if reduce == "pca" else f"-{reduce}")


def index_path(corpus_safe_name: str, name: str) -> Path:
    return index_dir() / corpus_safe_name / name


def rebuild_command(corpus_name: str, encoder: str, dim: int, kind: str, reduce: str) -> str:
    return f"rag index build --corpus {corpus_name} --encoder {encoder} --dim {dim} --index {kind} --reduce {reduce}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    fd = os.open(folder, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def write_index_dir(target: Path, files: dict[str, bytes], write_extra, manifest: dict) -> Path:
    """Write files + manifest into a new version folder, fsync, then atomically point `target` at it."""
    versions = target.parent / ".versions"
    versions.mkdir(parents=True, exist_ok=True)
    stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    tmp = versions / f".tmp-{target.name}-{stamp}"
    tmp.mkdir()
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        write_extra(tmp)
        checksums = {p.relative_to(tmp).as_posix(): _sha256(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
        manifest = {**manifest, "files": checksums, "bytes": sum((tmp / f).stat().st_size for f in checksums)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        _fsync_tree(tmp)
        final = versions / f"{target.name}-{stamp}"
        tmp.rename(final)
        link_tmp = target.parent / f".link-{target.name}-{stamp}"
        os.symlink(os.path.relpath(final, target.parent), link_tmp)
        os.replace(link_tmp, target)  # the atomic swap
        _fsync_tree_dir(target.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune_versions(versions, target, keep=final)
    return final


def _fsync_tree_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def _prune_versions(versions: Path, target: Path, keep: Path) -> None:
    """Keep the current version and the one before it (a server may still be reading it)."""
    mine = sorted(p for p in versions.glob(f"{target.name}-*") if p.name[len(target.name) + 1:][:1].isdigit())
    for old in [p for p in mine if p != keep][:-1]:
        shutil.rmtree(old, ignore_errors=True)


def read_manifest(path: Path) -> dict:
    path = Path(path)
    if not (path / MANIFEST).exists():
        raise IndexMissing(f"no index at {path}")
    try:
        return json.loads((path / MANIFEST).read_text())
    except json.JSONDecodeError as e:
        raise IndexCorrupt(f"{path / MANIFEST} is not valid JSON ({e}); rebuild the index") from e


def verify_checksums(path: Path, manifest: dict, rebuild: str) -> None:
    for name, digest in manifest.get("files", {}).items():
        file = path / name
        if not file.exists() or _sha256(file) != digest:
            raise IndexCorrupt(f"index file {file} is missing or fails its sha256 checksum; rebuild with: {rebuild}")


def list_indexes() -> list[dict]:
    """The manifest of every index in the index dir, with its path."""
    out = []
    root = index_dir()
    for link in sorted(root.glob("*/*")):
        if link.name.startswith(".") or not (link / MANIFEST).exists():
            continue
        try:
            out.append({**read_manifest(link), "path": str(link)})
        except RagError:
            continue
    return out


# ---------------------------------------------------------------- build and load

@dataclass
class LoadedIndex:
    manifest: dict
    path: Path  # the resolved version folder
    index: SearchIndex
    reducer: Reducer
    passages: list[Passage]
    encoder_state: dict


def check_options(encoder: str, dim: int | None, kind: str, reduce: str, resolve_dim: bool = True) -> int | None:
    """Validate the options and return d (default: the encoder's full width; None when not resolve_dim)."""
    check_encoder_name(encoder)
    valid_choice(kind, INDEX_KINDS, "index kind")
    valid_choice(reduce, REDUCERS, "reducer")
    if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int)):
        raise RagError(f"--dim must be a whole number, got {dim!r}")
    if not resolve_dim:
        return dim
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
