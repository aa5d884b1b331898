"""The index store on disk: corpus → encoder → reducer → FAISS index → indexes/<corpus>/<name>/, and back.

A stored index holds index.faiss (and, for ivf-pq-rerank, its float vectors in vectors.npy, memory-mapped when
loaded), reducer.npz, encoder_state.npz (if the encoder has state, e.g. IDF weights),
passages.jsonl (what search results show) and a sealed manifest.json (see rag.index.versions: versions, atomic swaps,
locks). Loading refuses an index whose corpus content, encoder, d, reducer or kind differs from what is asked, and
one whose manifest, files, FAISS shape, reducer width or passage count disagree with each other: every refusal
prints the command that rebuilds it.
"""

from __future__ import annotations

import dataclasses
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.config import VERSION, RagError, RagWarning, atomic_write_text, cache_dir, index_dir
from rag.data.corpus import Corpus, Passage
from rag.encoders import check_backend, encoder_spec, get_encoder, vector_name
from rag.encoders.base import document_text
from rag.encoders.cache import cached_embeddings, embed_corpus
from rag.encoders.probe import accept_backend, make_probe
from rag.index.kinds import INDEX_KINDS, INDEX_TABLE
from rag.index.search_index import RERANK_FILE, SearchIndex, build_index
from rag.index.spec import DEFAULT_INDEX, IndexSpec
from rag.index.versions import (
    MANIFEST,
    IndexCorrupt,
    IndexMissing,
    build_lock,
    corrupt,
    held_lock,
    prune_versions,
    read_manifest,
    reading,
    remove_stale,
    verify_version,
    write_version,
)
from rag.reduce import REDUCERS, Reducer, fit_for_corpus

__all__ = [
    "IndexCorrupt",
    "IndexMismatch",
    "IndexMissing",
    "MANIFEST",
    "build_and_save",
    "load_index",
    "load_index_dir",
    "read_manifest",
    "verify_index",
]
REQUIRED_FILES = ("index.faiss", "reducer.npz", "passages.jsonl")
MANIFEST_TYPES = {
    "corpus": str,
    "corpus_hash": str,
    "encoder": str,
    "dim": int,
    "kind": str,
    "reduce": str,
    "vectors": int,
}


class IndexMismatch(RagError):
    pass


# ---------------------------------------------------------------- names and checks


def index_path(corpus_safe_name: str, name: str) -> Path:
    return index_dir() / corpus_safe_name / name


def manifest_rebuild(manifest: dict) -> str:
    m = manifest if isinstance(manifest, dict) else {}
    corpus, encoder, dim = m.get("corpus", "<corpus>"), m.get("encoder", "<encoder>"), m.get("dim", "<d>")
    kind, reduce = m.get("kind", "<kind>"), m.get("reduce", "pca")
    return f"rag index build --corpus {corpus} --encoder {encoder} --dim {dim} --index {kind} --reduce {reduce}"


def check_manifest(path: Path, manifest: dict, rebuild: str) -> None:
    """Seal, file coverage, checksums and the type of every key that loading relies on; else IndexCorrupt."""
    entry = INDEX_TABLE.get(manifest.get("kind"))
    required = REQUIRED_FILES + ((RERANK_FILE,) if entry and entry.keeps_floats else ())
    verify_version(path, manifest, rebuild, required)
    for key, kind in MANIFEST_TYPES.items():
        value = manifest.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise corrupt(path, f"its manifest's '{key}' is {value!r}, not of type {kind.__name__}", rebuild)
    if manifest["kind"] not in INDEX_KINDS or manifest["reduce"] not in REDUCERS or manifest["dim"] < 1:
        raise corrupt(path, "its manifest names an unknown kind or reducer, or d < 1", rebuild)


def check_loaded(path: Path, manifest: dict, loaded: "LoadedIndex", rebuild: str) -> None:
    """The FAISS index, the reducer and the passages agree with the manifest (and the encoder's width)."""
    dim, n = manifest["dim"], manifest["vectors"]
    faiss_d = loaded.index.index.d
    entry = INDEX_TABLE[manifest["kind"]]
    want_d = 8 * -(-dim // 8) if entry.binary else dim
    problems = []
    if faiss_d != want_d:
        problems.append(f"the FAISS index has d={faiss_d}, the manifest says {dim}")
    if len(loaded.index) != n:
        problems.append(f"the FAISS index holds {len(loaded.index)} vectors, the manifest says {n}")
    floats = loaded.index.floats
    if entry.keeps_floats and (floats is None or floats.shape != (n, dim) or floats.dtype != np.float32):
        problems.append(
            f"{RERANK_FILE} holds {getattr(floats, 'shape', None)} {getattr(floats, 'dtype', '')} "
            f"vectors, the manifest says ({n}, {dim}) float32"
        )
    if len(loaded.passages) != n:
        problems.append(f"passages.jsonl holds {len(loaded.passages)} passages, the manifest says {n}")
    reducer = loaded.reducer
    if reducer.dim != dim or reducer.kind != manifest["reduce"]:
        problems.append(
            f"the reducer is {reducer.kind} to d={reducer.dim}, the manifest says {manifest['reduce']} to {dim}"
        )
    try:
        width = encoder_spec(manifest["encoder"]).width
    except RagError:
        width = None
    if reducer.matrix is not None:
        rows, cols = reducer.matrix.shape
        if cols != dim or reducer.mean is None or reducer.mean.shape != (rows,) or (width and rows != width):
            problems.append(f"the reducer maps {rows}→{cols}, not {width or rows}→{dim}")
    elif width and dim > width:
        problems.append(f"d={dim} is wider than the encoder's {width}")
    if problems:
        raise corrupt(path, problems[0], rebuild)


def list_indexes() -> list[dict]:
    """The manifest of every index in the index dir, with its path (unreadable ones are left out; see verify)."""
    out = []
    for link in sorted(index_dir().glob("*/*")):
        if link.name.startswith(".") or not (link / MANIFEST).exists():
            continue
        try:
            manifest = read_manifest(link)
        except RagError:
            continue
        if all(isinstance(manifest.get(k), t) for k, t in MANIFEST_TYPES.items()):
            out.append({**manifest, "path": str(link)})
    return out


# ---------------------------------------------------------------- who uses the shared cache

INDEX_FOLDERS = "index-folders.json"  # in the cache dir: every index folder that built or opened an index with it


def register_index_folder(root: Path | None = None) -> None:
    """Record (once) that this index folder uses the cache, so that `rag index prune` run against another index
    folder sharing the cache keeps what this one needs."""
    root = str((root or index_dir()).resolve())
    registry = cache_dir() / INDEX_FOLDERS
    if root in map(str, registered_index_folders()):
        return  # the common case: no lock, no write
    try:
        with held_lock(cache_dir() / ".locks" / "index-folders.lock", "another registration", None):
            folders = [str(f) for f in registered_index_folders()]
            if root not in folders:  # folders removed since drop out of the record
                kept = {*(f for f in folders if Path(f).is_dir()), root}
                atomic_write_text(registry, json.dumps(sorted(kept), indent=1))
    except OSError as exc:  # a read-only cache: searching still works; only prune's protection is missing
        warnings.warn(f"cannot record this index folder in {registry} ({exc.strerror})", RagWarning, stacklevel=2)


def registered_index_folders() -> list[Path]:
    """Every index folder recorded as using this cache (a damaged record counts as empty; see register)."""
    try:
        folders = json.loads((cache_dir() / INDEX_FOLDERS).read_text(encoding="utf-8"))
        return [Path(f) for f in folders if isinstance(f, str)]
    except (OSError, ValueError, TypeError):
        return []


def index_links() -> list[Path]:
    """Every index name in the index dir (the symlinks), whether or not what they point at is whole."""
    return sorted(p for p in index_dir().glob("*/*") if not p.name.startswith(".") and p.is_symlink())


# ---------------------------------------------------------------- build and load


@dataclass
class LoadedIndex:
    manifest: dict
    path: Path  # the resolved version folder
    index: SearchIndex
    reducer: Reducer
    passages: list[Passage]
    encoder_state: dict


def build_and_save(corpus: Corpus, spec: IndexSpec = DEFAULT_INDEX, progress=None) -> dict:
    """Encode (or reuse cached vectors), reduce to d, build the FAISS index and store it atomically.

    One build per index name at a time: a second builder waits for the first, and when the index that build
    stored is whole and matches (corpus content, encoder, d, kind, reducer) it is reused ("reused": True)."""
    spec = spec.validated()
    target = index_path(corpus.safe_name, spec.name)
    register_index_folder()
    with build_lock(target) as waited:
        if waited:
            reused = whole_and_matching(target, spec.expect(corpus.content_hash))
            if reused:
                return {**reused, "path": str(target), "reused": True}
        remove_stale(target)
        final = write_version(target, *encode_and_index(corpus, spec, progress))
        prune_versions(target)
        return {**read_manifest(final), "path": str(target), "reused": False}


def whole_and_matching(target: Path, expect: dict) -> dict | None:
    """The manifest of the index at target when it verifies and was built with `expect`; else None."""
    try:
        with reading(target) as real:
            manifest = read_manifest(real)
            check_manifest(real, manifest, "")
    except RagError:
        return None
    return manifest if all(manifest.get(k) == v for k, v in expect.items()) else None


def encode_and_index(corpus: Corpus, spec: IndexSpec, progress):
    """(write_files(folder), manifest) for one index version: vectors from the cache or the encoder."""
    spec = spec.validated()
    encoder_name, dim, kind, reduce, backend = spec.encoder, spec.dim, spec.kind, spec.reduce, spec.backend
    cached = cached_embeddings(corpus, vector_name(encoder_name, backend), encoder_spec(encoder_name).width)
    if cached:
        vectors, state = cached
    else:
        encoder = get_encoder(encoder_name, backend)
        vectors = embed_corpus(corpus, encoder, progress=progress)
        state = encoder.get_state() if hasattr(encoder, "get_state") else {}
    if not np.isfinite(vectors).all():
        raise RagError(
            f"encoder {encoder_name} produced NaN or infinite vectors for {corpus.name}; "
            "check the encoder (a damaged checkpoint?) before building"
        )
    reducer = fit_for_corpus(corpus, encoder_name, vectors, dim, reduce, state=state)  # distill: pseudo-queries
    check_reduced_width(reducer, dim, encoder_name)
    start = time.perf_counter()
    index = build_index(reducer.transform(vectors), kind)
    build_s = time.perf_counter() - start
    data = index.serialize()

    def write_files(folder: Path) -> None:
        (folder / "index.faiss").write_bytes(data)
        index.write_side_files(folder)
        reducer.save(folder)
        np.savez(folder / "probe.npz", **make_probe([document_text(p) for p in corpus.passages], vectors))
        if state:
            np.savez(folder / "encoder_state.npz", **state)
        with open(folder / "passages.jsonl", "w", encoding="utf-8") as f:
            for p in corpus.passages:
                f.write(json.dumps(dataclasses.asdict(p)) + "\n")

    manifest = {
        "corpus": corpus.name,
        "corpus_safe_name": corpus.safe_name,
        "corpus_hash": corpus.content_hash,
        "encoder": encoder_name,
        "backend": backend,
        "dim": dim,
        "reduce": reduce,
        "kind": kind,
        "metric": "inner_product",
        "vectors": len(index),
        "index_bytes": len(data) + index.side_bytes,
        "bytes_per_vector": (len(data) + index.side_bytes) / max(1, len(index)),
        "build_s": round(build_s, 4),
        "device": index.device,
        "rag_version": VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return write_files, manifest


def check_reduced_width(reducer: Reducer, dim: int, encoder_name: str) -> None:
    """A reducer that keeps fewer dimensions than asked (abtt near full width) is an error naming the widest d."""
    if reducer.dim != dim:
        raise RagError(
            f"--reduce {reducer.kind} keeps only {reducer.dim} dimensions of {encoder_name}; "
            f"choose --dim {reducer.dim} or less"
        )


def load_index(corpus: Corpus, spec: IndexSpec = DEFAULT_INDEX, backend: str | None = None) -> LoadedIndex:
    """Load the stored index for this spec, refusing one built from anything else. `backend` is how queries will
    be encoded: an index built with another encoder backend is accepted when that backend reproduces its probe
    vectors (rag.encoders.probe)."""
    spec = spec.validated()
    rebuild = spec.rebuild_command(corpus.name)
    link = index_path(corpus.safe_name, spec.name)
    if not link.exists():
        raise IndexMissing(f"no index for these options at {link}; build it with: {rebuild}")
    loaded = load_index_dir(
        link,
        expect=spec.expect(corpus.content_hash),
        rebuild=rebuild + f" (or, when documents changed, update every index of the corpus: "
        f"rag index update --corpus {corpus.name})",
    )
    query_backend = check_backend(spec.encoder, backend)
    accept_backend(
        loaded.path, loaded.manifest, spec.encoder, backend, f"rebuild it with: {rebuild} --backend {query_backend}"
    )
    return loaded


def load_index_dir(path: Path, expect: dict | None = None, rebuild: str | None = None) -> LoadedIndex:
    """Load one index (a link or a version folder) under its reader lock: verify the manifest and every file,
    check it against `expect`, read everything, and check the pieces against each other."""
    register_index_folder()
    with reading(Path(path)) as real:
        manifest = read_manifest(real, rebuild)
        rebuild = rebuild or manifest_rebuild(manifest)
        check_manifest(real, manifest, rebuild)
        for key, want in (expect or {}).items():
            if manifest.get(key) != want:
                what = "corpus content" if key == "corpus_hash" else key
                raise IndexMismatch(
                    f"the index at {path} was built with another {what} "
                    f"({str(manifest.get(key))[:16]} ≠ {str(want)[:16]}); rebuild it with: {rebuild}"
                )
        try:
            index = SearchIndex.read(manifest["kind"], real / "index.faiss", manifest["dim"], binary_rescore=200)
            reducer = Reducer.load(real)
            state = dict(np.load(real / "encoder_state.npz")) if (real / "encoder_state.npz").exists() else {}
            with open(real / "passages.jsonl", encoding="utf-8") as f:
                passages = [Passage(**json.loads(line)) for line in f]
        except (RuntimeError, ValueError, KeyError, TypeError, OSError) as e:
            raise corrupt(path, f"it cannot be read ({type(e).__name__}: {e})", rebuild) from e
    loaded = LoadedIndex(manifest, real, index, reducer, passages, state)
    check_loaded(Path(path), manifest, loaded, rebuild)
    return loaded


def verify_index(path: Path) -> dict:
    """Load one index fully and report {path, status: ok|corrupt|missing, problem, manifest}; never raises RagError."""
    manifest = {}
    try:
        manifest = read_manifest(Path(path))
        loaded = load_index_dir(path)
        return {"path": str(path), "status": "ok", "problem": "", "manifest": loaded.manifest}
    except IndexMissing as e:
        return {"path": str(path), "status": "missing", "problem": str(e), "manifest": manifest}
    except RagError as e:
        return {"path": str(path), "status": "corrupt", "problem": str(e), "manifest": manifest}
