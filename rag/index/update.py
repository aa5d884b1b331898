"""Keeping stored indexes in step with a changing folder, and removing what nothing uses any more.

- `update_indexes(corpus)` rebuilds every stored index of a corpus whose content changed. Vectors come from the
  per-passage embedding cache (rag.encoders.cache), so only new or changed passages are encoded; each index is
  written as a new version and swapped in atomically, like any build.
- `refresh_if_changed(corpus, spec)` is what search and ask call first: a folder corpus whose files changed since
  its index was built is updated (update_indexes) before it is searched, with a RagNote before and after saying
  what changed and what it cost; a change with more than AUTO_UPDATE_MAX passages to encode is refused with the
  command that does it, never started unasked.
- `prune(keep)` removes all but the newest `keep` versions of every index (never the current one, never one that a
  reader holds: a running server holds the version it serves, see `hold_version`), then the cache entries that no
  remaining index uses: per-corpus embedding folders, BM25 folders and per-passage vectors.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import time
import warnings
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rag.config import RagError, RagNote, bm25_cache_dir, cache_dir, index_dir
from rag.data.corpus import NAMED_CORPORA, Corpus, Passage
from rag.data.parsed_cache import orphans as parsed_orphans
from rag.encoders import get_encoder, vector_name
from rag.encoders.base import document_text
from rag.encoders.cache import (
    cached_embeddings,
    embed_corpus_counted,
    embedding_cache_dir,
    load_passage_vectors,
    load_vectors,
    save_passage_vectors,
    slug,
    text_key,
)
from rag.index.spec import IndexSpec
from rag.index.store import build_and_save, index_path, register_index_folder, registered_index_folders
from rag.index.versions import READERS, build_lock, corpus_lock, prune_versions, read_manifest, version_folders


def index_links(corpus_safe_name: str | None = None, root: Path | None = None) -> list[Path]:
    """The index symlinks (indexes/<corpus>/<name>) of one corpus, or of every corpus (in `root`, default the
    index dir)."""
    root = root or index_dir()
    folders = [root / corpus_safe_name] if corpus_safe_name else sorted(p for p in root.glob("*") if p.is_dir())
    return sorted(p for f in folders for p in f.glob("*") if p.is_symlink() and not p.name.startswith("."))


def stored_passages(version: Path) -> list[Passage]:
    with open(version / "passages.jsonl", encoding="utf-8") as f:
        return [Passage(**json.loads(line)) for line in f]


def passage_diff(old: list[Passage], new: list[Passage]) -> dict:
    """How many passages were added, changed (same id, other title or text), removed and kept."""
    before = {p.id: (p.title, p.text) for p in old}
    after = {p.id: (p.title, p.text) for p in new}
    changed = sum(1 for i in after.keys() & before.keys() if after[i] != before[i])
    return {
        "added": len(after.keys() - before.keys()),
        "changed": changed,
        "removed": len(before.keys() - after.keys()),
        "unchanged": len(after.keys() & before.keys()) - changed,
    }


def update_indexes(corpus: Corpus, progress=None, on_wait=None) -> list[dict]:
    """Bring every stored index of the corpus up to date with its content; one row per index. Holds the corpus
    lock: a second update (or a prune) of the same corpus waits, telling `on_wait`, then finds it up to date."""
    with corpus_lock(index_dir() / corpus.safe_name, on_wait):
        return update_locked(corpus, progress)


def update_locked(corpus: Corpus, progress=None) -> list[dict]:
    links = index_links(corpus.safe_name)
    if not links:
        raise RagError(f"no stored index of {corpus.name} yet; build one with: rag index build --corpus {corpus.name}")
    rows = []
    for link in links:
        m = read_manifest(link)
        row = {"index": link.name, "path": str(link), "encoded": 0}
        if m.get("corpus_hash") == corpus.content_hash:
            rows.append({**row, "status": "up to date", **passage_diff(corpus.passages, corpus.passages)})
            continue
        start = time.perf_counter()
        old = stored_passages(link.resolve())
        diff = passage_diff(old, corpus.passages)
        backend = m.get("backend")
        vectors_of = vector_name(m["encoder"], backend)  # the cache name: fp32 backends share one
        seed_passage_cache(old, m["corpus_hash"], vectors_of)  # an index built before the per-passage cache
        if cached_embeddings(corpus, vectors_of) is None:  # encode only what the caches do not hold
            encoder = get_encoder(m["encoder"], backend)
            _, row["encoded"] = embed_corpus_counted(corpus, encoder, progress=progress)
        built = build_and_save(corpus, IndexSpec.from_manifest(m), progress=progress)
        rows.append(
            {
                **row,
                **diff,
                "status": "updated",
                "vectors": built["vectors"],
                "seconds": round(time.perf_counter() - start, 3),
            }
        )
    return rows


AUTO_UPDATE_MAX = 1000  # passages to encode before a search updates unasked (about a minute on 2 CPU cores)


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 passage', '2 passages', '2 indexes'."""
    return f"{n:,} " + (word if n == 1 else many or word + "s")


def refresh_if_changed(
    corpus: Corpus, spec: IndexSpec, progress=None, max_encode: int = AUTO_UPDATE_MAX
) -> dict | None:
    """Update the stored indexes of a folder corpus whose content changed since `spec`'s index was built, before it
    is searched; None when there is nothing to do (named corpora never change; a missing index is built elsewhere).

    Only new or changed passages are encoded (the per-passage cache holds the rest). Over `max_encode` of them, a
    RagError names `rag index update` (which says how long it will take) instead of starting unasked."""
    link = index_path(corpus.safe_name, spec.name)
    if corpus.name in NAMED_CORPORA or not link.exists():
        return None
    try:
        manifest = read_manifest(link)
        if manifest.get("corpus_hash") == corpus.content_hash:
            return None
        old = stored_passages(link.resolve())
    except (RagError, OSError, ValueError, TypeError):
        return None  # loading reports a damaged index with its rebuild command
    diff = passage_diff(old, corpus.passages)
    todo = diff["added"] + diff["changed"]
    what = (
        f"{diff['added']:,} added, {diff['changed']:,} changed, {diff['removed']:,} removed "
        f"of {plural(len(corpus.passages), 'passage')}"
    )
    if todo > max_encode:
        raise RagError(
            f"{corpus.name} changed since its index was built ({what}): over {max_encode:,} passages to encode, so "
            f"it is not updated unasked; run: rag index update --corpus {corpus.name} (or search the old index with "
            "--no-update)"
        )
    warnings.warn(
        f"{corpus.name} changed since its index was built ({what}); updating its indexes first",
        RagNote,
        stacklevel=2,
    )
    start = time.perf_counter()
    rows = update_indexes(corpus, progress=progress)
    seconds = time.perf_counter() - start
    encoded = sum(r["encoded"] for r in rows)
    updated = sum(r["status"] == "updated" for r in rows)
    warnings.warn(
        f"updated {plural(updated, 'index', 'indexes')} of {corpus.name} in {seconds:.1f} s, encoding {plural(encoded, 'passage')}",
        RagNote,
        stacklevel=2,
    )
    return {**diff, "encoded": encoded, "indexes": rows, "seconds": round(seconds, 3)}


def seed_passage_cache(passages: list[Passage], corpus_hash: str, encoder_name: str) -> int:
    """Copy the per-corpus cached vectors of an earlier corpus content into the per-passage cache (encoders
    without corpus statistics only); returns how many vectors were added."""
    folder = embedding_cache_dir(SimpleNamespace(content_hash=corpus_hash), encoder_name)
    if (folder / "encoder_state.npz").exists():  # IDF-weighted: every vector depends on the whole corpus
        return 0
    vectors = load_vectors(folder / "vectors.npy", len(passages))
    if vectors is None:
        return 0
    keys = [text_key(document_text(p)) for p in passages]
    known = load_passage_vectors(encoder_name, set(keys))
    missing = [i for i, k in enumerate(keys) if k not in known]
    if missing:
        save_passage_vectors(encoder_name, [keys[i] for i in missing], vectors[missing])
    return len(missing)


def hold_version(version: Path | str | None):
    """Hold a version folder's reader lock (shared) for as long as the returned file stays open, so that prune
    keeps it: the retriever pool holds the version each open retriever serves. None when there is nothing to hold."""
    if version is None or not (Path(version) / READERS).exists():
        return None
    f = open(Path(version) / READERS, "rb")
    fcntl.flock(f.fileno(), fcntl.LOCK_SH)
    return f


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def prune(keep: int = 1, on_wait=None) -> dict:
    """Remove old index versions and orphaned cache entries; say what was removed and how many bytes it freed.
    A cache entry is orphaned when no index folder recorded as using the cache (rag.index.store
    .register_index_folder) still needs it, not just this one."""
    if not isinstance(keep, int) or keep < 1:
        raise RagError(f"--keep must be at least 1 (the current version), got {keep!r}")
    removed_versions, freed = [], 0
    register_index_folder()
    for corpus_folder in sorted({link.parent for link in index_links()}):
        with corpus_lock(corpus_folder, on_wait):
            for link in index_links(corpus_folder.name):
                with build_lock(link):
                    sizes = {v: folder_bytes(v) for v in version_folders(link)}
                    for gone in prune_versions(link, keep):
                        removed_versions.append(str(gone))
                        freed += sizes.get(gone, 0)
    cache = prune_cache()
    return {
        "versions_removed": removed_versions,
        "cache_removed": cache["removed"],
        "passage_vectors_removed": cache["passage_vectors"],
        "bytes_freed": freed + cache["bytes"],
    }


def used_by_indexes() -> tuple[set[str], dict[str, set[str]]]:
    """(corpus hash prefixes, {encoder slug: text keys}) of every stored version left in every index folder that
    uses this cache (this one and the registered others that still exist)."""
    hashes: set[str] = set()
    keys: dict[str, set[str]] = {}
    roots = {index_dir().resolve(), *(r for r in registered_index_folders() if r.is_dir())}
    for link in (link for root in sorted(roots) for link in index_links(root=root)):
        for version in version_folders(link):
            try:
                m = read_manifest(version)
                passages = stored_passages(version)
                name = slug(vector_name(str(m.get("encoder", "")), m.get("backend")))
            except (RagError, OSError, ValueError, TypeError):
                continue  # an unreadable version protects nothing; verify reports it
            hashes.add(str(m.get("corpus_hash", ""))[:16])
            keys.setdefault(name, set()).update(text_key(document_text(p)) for p in passages)
    return hashes, keys


def prune_cache() -> dict:
    """Remove cache entries that no stored index uses: per-corpus embedding and BM25 folders, per-passage vectors;
    and the parsed files of folders that no longer exist (rag.data.parsed_cache)."""
    hashes, keys = used_by_indexes()
    removed, freed, vectors_removed = [], 0, 0
    root = cache_dir()
    for folder in sorted((root / "embeddings").glob("*-*")) + sorted(bm25_cache_dir().glob("*")):
        if not folder.is_dir() or folder.name == "by-passage" or folder.name[:16] in hashes:
            continue
        freed += folder_bytes(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(str(folder))
    for path in parsed_orphans():  # parsed files of folders that no longer exist
        try:
            size = path.stat().st_size
            path.unlink()
        except OSError:
            continue
        freed += size
        removed.append(str(path))
    for enc_dir in sorted((root / "embeddings" / "by-passage").glob("*")):
        n, size = compact_packs(enc_dir, keys.get(enc_dir.name, set()))
        vectors_removed += n
        freed += size
    return {"removed": removed, "bytes": freed, "passage_vectors": vectors_removed}


def compact_packs(folder: Path, wanted: set[str]) -> tuple[int, int]:
    """Rewrite one encoder's packs keeping only the wanted keys; (vectors removed, bytes freed)."""
    packs = sorted(folder.glob("pack-*.npz"))
    kept_keys, kept_vectors, seen, total = [], [], set(), 0
    for pack in packs:
        try:
            with np.load(pack, allow_pickle=False) as z:
                pack_keys, vectors = z["keys"].tolist(), z["vectors"]
        except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile):
            pack_keys, vectors = [], None
        total += len(pack_keys)
        for i, k in enumerate(pack_keys):
            if k in wanted and k not in seen:
                seen.add(k)
                kept_keys.append(k)
                kept_vectors.append(vectors[i])
    if len(kept_keys) == total and len(packs) <= 1:
        return 0, 0
    before = sum(p.stat().st_size for p in packs)
    if kept_keys:
        save_passage_vectors(folder.name, kept_keys, np.stack(kept_vectors))
    for pack in packs:
        pack.unlink(missing_ok=True)
    after = sum(p.stat().st_size for p in folder.glob("pack-*.npz"))
    return total - len(kept_keys), max(0, before - after)
