"""FAISS indexes: build at any d, store on disk with a manifest, load with checks.

Kinds (all inner product on L2-normalised vectors, i.e. cosine):
  flat      exact search, 4·d bytes per vector
  ivf-flat  inverted lists over k-means cells, 4·d bytes per vector (+ list ids)
  ivf-pq    inverted lists + product quantisation, m bytes per vector
  hnsw      graph search, 4·d bytes + ~2·M links per vector
  sq8       8-bit scalar quantisation, d bytes per vector
  binary    1 bit per coordinate (d/8 bytes); Hamming candidates rescored with the float query

On disk: indexes/<corpus>/<name> is a symlink to indexes/<corpus>/.versions/<name>-<stamp>/. A build writes a
new version in a temporary folder, fsyncs it, renames it, then swaps the symlink atomically: a reader sees the
old index or the new one, and a killed build leaves the old one whole.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.config import RagError, index_dir, placement, valid_choice

INDEX_KINDS = ("flat", "ivf-flat", "ivf-pq", "hnsw", "sq8", "binary")
MANIFEST = "manifest.json"


class IndexMissing(RagError):
    pass


class IndexMismatch(RagError):
    pass


class IndexCorrupt(RagError):
    pass


# ---------------------------------------------------------------- in-memory indexes

def _ivf_lists(n: int) -> int:
    """About 4·√n lists, but at least 39 training points per list (FAISS's own minimum)."""
    return max(1, min(int(4 * math.sqrt(n)), n // 39))


def _pq_shape(d: int, n: int) -> tuple[int, int]:
    """(m sub-quantisers, bits each): about 4 dimensions per sub-quantiser, fewer bits on tiny corpora."""
    m = max(k for k in range(1, d + 1) if d % k == 0 and k <= max(1, d // 4))
    bits = 8 if n >= 256 * 39 // 4 else max(1, min(8, int(math.log2(max(2, n // 4)))))
    return m, bits


class SearchIndex:
    """One FAISS index (or a torch matrix on CUDA) with a uniform search()."""

    def __init__(self, kind: str, index, dim: int, device: str, binary_rescore: int = 0):
        self.kind, self.index, self.dim, self.device = kind, index, dim, device
        self.binary_rescore = binary_rescore  # binary: how many Hamming candidates to rescore
        self._torch_matrix = None
        self._codes = None  # binary: the packed document codes, read once

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k (scores, row numbers) for each query; rows are -1 where fewer than k exist."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(k, len(self))
        if self.kind == "binary":
            return self._search_binary(queries, k)
        if self._torch_matrix is not None:
            import torch

            q = torch.from_numpy(queries).to(self._torch_matrix.device)
            scores, rows = torch.topk(q @ self._torch_matrix.T, k, dim=1)
            return scores.cpu().numpy(), rows.cpu().numpy()
        return self.index.search(queries, k)

    def _search_binary(self, queries, k):
        import faiss

        codes = _pack_bits(queries, self.index.d)
        n_cand = min(len(self), max(k, self.binary_rescore))
        _, cand = self.index.search(codes, n_cand)
        # Rescore: the float query against the ±1 document codes (asymmetric distance, no float docs stored).
        if self._codes is None:
            self._codes = faiss.vector_to_array(self.index.xb).reshape(self.index.ntotal, -1)
        doc_codes = self._codes
        scores = np.empty((len(queries), k), np.float32)
        rows = np.empty((len(queries), k), np.int64)
        for i, (q, c) in enumerate(zip(queries, cand)):
            bits = np.unpackbits(doc_codes[c], axis=1, bitorder="little")[:, : self.dim].astype(np.float32)
            s = (2 * bits - 1) @ q
            top = np.argsort(-s)[:k]
            scores[i], rows[i] = s[top], c[top]
        return scores, rows

    def serialize(self) -> bytes:
        import faiss

        index = self.index
        if self.kind == "binary":
            return faiss.serialize_index_binary(index).tobytes()
        if self.device == "cuda-faiss":
            index = faiss.index_gpu_to_cpu(index)
        return faiss.serialize_index(index).tobytes()

    @property
    def nbytes(self) -> int:
        return len(self.serialize())

    def to_device(self) -> "SearchIndex":
        """Move to the GPU when one is present (FAISS GPU, else a torch matrix for flat); else stay on the CPU."""
        where = placement()
        if where == "cuda-faiss" and self.kind in ("flat", "ivf-flat", "ivf-pq", "sq8"):
            import faiss

            self._gpu_resources = faiss.StandardGpuResources()  # must outlive the GPU index
            self.index = faiss.index_cpu_to_gpu(self._gpu_resources, 0, self.index)
            self.device = where
        elif where == "cuda-torch" and self.kind == "flat":
            import faiss
            import torch

            xb = faiss.rev_swig_ptr(self.index.get_xb(), self.index.ntotal * self.dim)
            self._torch_matrix = torch.from_numpy(np.array(xb).reshape(-1, self.dim)).cuda()
            self.device = where
        return self

    @classmethod
    def read(cls, kind: str, path: Path, dim: int, binary_rescore: int = 0) -> "SearchIndex":
        """Read an index file with faiss.read_index (no extra copy of the bytes in Python)."""
        import faiss

        index = faiss.read_index_binary(str(path)) if kind == "binary" else faiss.read_index(str(path))
        _set_search_params(kind, index)
        return cls(kind, index, dim, "cpu", binary_rescore).to_device()


def _pack_bits(x: np.ndarray, padded_dim: int) -> np.ndarray:
    bits = np.zeros((len(x), padded_dim), np.uint8)
    bits[:, : x.shape[1]] = x > 0
    return np.packbits(bits, axis=1, bitorder="little")


def _set_search_params(kind: str, index) -> None:
    if kind in ("ivf-flat", "ivf-pq"):
        index.nprobe = min(index.nlist, max(8, index.nlist // 8))
    elif kind == "hnsw":
        index.hnsw.efSearch = 128


def build_index(vectors: np.ndarray, kind: str, seed: int = 0) -> SearchIndex:
    """Build an index of `kind` over L2-normalised float32 vectors [n, d]."""
    import faiss

    valid_choice(kind, INDEX_KINDS, "index kind")
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    ip = faiss.METRIC_INNER_PRODUCT
    if kind == "flat":
        index = faiss.IndexFlatIP(d)
    elif kind == "ivf-flat":
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, _ivf_lists(n), ip)
    elif kind == "ivf-pq":
        m, bits = _pq_shape(d, n)
        index = faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, _ivf_lists(n), m, bits, ip)
    elif kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, 32, ip)
        index.hnsw.efConstruction = 80
    elif kind == "sq8":
        index = faiss.IndexScalarQuantizer(d, faiss.ScalarQuantizer.QT_8bit, ip)
    else:  # binary
        padded = 8 * math.ceil(d / 8)
        index = faiss.IndexBinaryFlat(padded)
        index.add(_pack_bits(x, padded))
        return SearchIndex(kind, index, d, "cpu", binary_rescore=200).to_device()
    if not index.is_trained:
        if hasattr(index, "cp"):
            index.cp.seed = seed
        index.train(x)
    index.add(x)
    _set_search_params(kind, index)
    return SearchIndex(kind, index, d, "cpu").to_device()


# ---------------------------------------------------------------- the store on disk

def index_name(encoder: str, dim: int, kind: str, reduce: str = "pca") -> str:
    from rag.encoders import _slug

    return f"{_slug(encoder)}-d{dim}-{kind}" + ("" if reduce == "pca" else f"-{reduce}")


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
