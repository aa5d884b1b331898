"""Version folders on disk: sealed manifests, atomic swaps, one build per name, and pruning that spares readers.

indexes/<corpus>/<name> is a symlink to indexes/<corpus>/.versions/<name>-<stamp>/. A build writes a new version
in `.tmp-<name>-<stamp>`, fsyncs it, renames it, then swaps the symlink atomically: a reader sees the old version
or the new one, and a killed build leaves the old one whole.

What can't lie:
  manifest.json  lists every other file of the version with its sha256 (`files`) and is sealed by
                 `manifest_sha256`, the sha256 of its own canonical JSON without that key. An edited or damaged
                 manifest, a file it does not list, or a listed file that is missing or changed is corrupt.
                 With RAG_INDEX_KEY set the seal is an HMAC-SHA256 under that key (`seal: hmac-sha256`), which
                 someone who can write the folder but does not hold the key cannot recompute; with the key set an
                 unkeyed manifest is refused. File entries must be plain relative paths inside the version
                 folder, and an index link must point into its own `.versions` folder.
Locks (fcntl.flock; the kernel drops them when a process dies, so a killed build never leaves a lock behind):
  .locks/<name>.lock    one build per index name at a time; the next builder waits for it
  <version>/.readers    held shared while a reader loads that version; pruning takes it exclusively without
                        waiting and skips any version a reader holds
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from rag.config import RagError

MANIFEST = "manifest.json"
READERS = ".readers"
SEAL = "manifest_sha256"
SEAL_KIND = "seal"  # absent: plain sha256; "hmac-sha256": keyed with RAG_INDEX_KEY
KEEP_VERSIONS = 2  # the current version and the one before it
STALE = re.compile(r"^\.(tmp|link|trash)-(.+)-(\d{8}-\d{6}-\d{9}-\d+)$")


class IndexMissing(RagError):
    pass


class IndexCorrupt(RagError):
    pass


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def index_key() -> bytes | None:
    """RAG_INDEX_KEY (at least 16 characters) for keyed manifest seals, or None."""
    key = os.environ.get("RAG_INDEX_KEY", "").strip()
    if key and len(key) < 16:
        raise RagError("RAG_INDEX_KEY is shorter than 16 characters; use a long random one (openssl rand -hex 32)")
    return key.encode() if key else None


def manifest_digest(manifest: dict, key: bytes | None = None) -> str:
    """The seal: sha256 of the manifest's canonical JSON (sorted keys, no spaces) leaving out the seal itself, or
    with a key the HMAC-SHA256 of the same bytes."""
    body = json.dumps({k: v for k, v in manifest.items() if k != SEAL}, sort_keys=True, separators=(",", ":"))
    if key:
        return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()
    return hashlib.sha256(body.encode()).hexdigest()


def seal(manifest: dict) -> dict:
    """The manifest with its seal: keyed (HMAC-SHA256) when RAG_INDEX_KEY is set."""
    key = index_key()
    manifest = {k: v for k, v in manifest.items() if k not in (SEAL, SEAL_KIND)}
    if key:
        manifest[SEAL_KIND] = "hmac-sha256"
    manifest[SEAL] = manifest_digest(manifest, key)
    return manifest


def seal_problem(manifest: dict) -> str | None:
    """Why the manifest's seal does not hold, or None."""
    if SEAL not in manifest:
        return "its manifest has no seal (edited, damaged, or written by an older rag)"
    key, kind = index_key(), manifest.get(SEAL_KIND)
    if kind == "hmac-sha256" and not key:
        return "its manifest is sealed with RAG_INDEX_KEY; set the same key to open it"
    if key and kind != "hmac-sha256":
        return "its manifest has no keyed seal and RAG_INDEX_KEY is set (rebuild it with the key set)"
    if kind not in (None, "hmac-sha256"):
        return f"its manifest names an unknown seal kind {str(kind)[:40]!r}"
    if not hmac.compare_digest(str(manifest.get(SEAL)), manifest_digest(manifest, key if kind else None)):
        what = "HMAC-SHA256" if kind else "sha256"
        return f"its manifest fails its own {what} seal (edited, damaged, or written by an older rag)"
    return None


def unsafe_entry(name: str) -> bool:
    """A manifest file entry that is not a plain relative path inside the version folder."""
    parts = name.split("/")
    return not name or name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts)


def corrupt(path: Path, problem: str, rebuild: str) -> IndexCorrupt:
    return IndexCorrupt(f"the index at {path} is corrupt: {problem}; rebuild it with: {rebuild}")


def read_manifest(path: Path, rebuild: str | None = None) -> dict:
    """The manifest of a version folder (or of the version a link points to). Not yet verified."""
    path = Path(path)
    if not (path / MANIFEST).exists():
        raise IndexMissing(f"no index at {path}")
    rebuild = rebuild or "rag index build with the same options"
    try:
        manifest = json.loads((path / MANIFEST).read_bytes().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise corrupt(path, f"its manifest is not valid JSON ({e})", rebuild) from None
    except RecursionError:  # nesting deeper than the parser's stack: no manifest is written that way
        raise corrupt(path, "its manifest nests deeper than any manifest rag writes", rebuild) from None
    if not isinstance(manifest, dict):
        raise corrupt(path, f"its manifest holds a JSON {type(manifest).__name__}, not an object", rebuild)
    return manifest


def verify_version(path: Path, manifest: dict, rebuild: str, required: tuple[str, ...] = ()) -> None:
    """The seal, the file list (every file listed, every required file present) and every sha256; else IndexCorrupt."""
    problem = seal_problem(manifest)
    if problem:
        raise corrupt(path, problem, rebuild)
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise corrupt(path, "its manifest has no valid 'files' list", rebuild)
    outside = [name for name in files if unsafe_entry(name) or (path / name).is_symlink()]
    if outside:
        raise corrupt(path, f"its manifest lists {outside[0][:80]!r}, which is not a file inside the version", rebuild)
    readers = path / READERS
    if readers.exists() and (readers.is_symlink() or not readers.is_file()):
        raise corrupt(path, f"{READERS} is not a plain file (the reader lock search takes)", rebuild)
    on_disk = {p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file()} - {MANIFEST, READERS}
    unlisted = sorted(on_disk - set(files)) + [f for f in required if f not in files]
    if unlisted:
        raise corrupt(path, f"{unlisted[0]} is not covered by the manifest's checksums", rebuild)
    for name, digest in files.items():
        file = path / name
        if not file.is_file() or sha256_file(file) != digest:
            raise IndexCorrupt(f"index file {file} is missing or fails its sha256 checksum; rebuild with: {rebuild}")


# ---------------------------------------------------------------- writing


def fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def new_stamp() -> str:
    """UTC time to the nanosecond, then the pid: versions of one name sort by creation time."""
    now = time.time_ns()
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime(now // 10**9))}-{now % 10**9:09d}-{os.getpid()}"


def write_version(target: Path, write_files, manifest: dict) -> Path:
    """Write a version with `write_files(folder)`, list and seal it, fsync, rename, then swap `target` to it."""
    versions = target.parent / ".versions"
    versions.mkdir(parents=True, exist_ok=True)
    stamp = new_stamp()
    tmp = versions / f".tmp-{target.name}-{stamp}"
    tmp.mkdir()
    try:
        write_files(tmp)
        names = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        checksums = {name: sha256_file(tmp / name) for name in names}
        manifest = seal({**manifest, "files": checksums, "bytes": sum((tmp / f).stat().st_size for f in checksums)})
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        (tmp / READERS).touch()
        for path in sorted(tmp.rglob("*"), reverse=True):
            fsync_path(path)
        fsync_path(tmp)
        final = versions / f"{target.name}-{stamp}"
        tmp.rename(final)
        link_tmp = target.parent / f".link-{target.name}-{stamp}"
        os.symlink(os.path.relpath(final, target.parent), link_tmp)
        os.replace(link_tmp, target)  # the atomic swap
        fsync_path(target.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


# ---------------------------------------------------------------- locks


def try_lock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def lock_file(target: Path) -> Path:
    locks = target.parent / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    return locks / f"{target.name}.lock"


@contextmanager
def build_lock(target: Path):
    """Hold the build lock of one index name; yields True when another build held it and this one waited."""
    fd = os.open(lock_file(target), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        waited = not try_lock(fd, fcntl.LOCK_EX)
        if waited:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield waited
    finally:
        os.close(fd)  # closing releases the lock


def corpus_lock(corpus_folder: Path, on_wait=None):
    """Hold the lock of one corpus in one index folder (indexes/<corpus>/.locks/__corpus__.lock): `rag index
    update`, `build` and `prune` of the same corpus take turns. `on_wait(message)` is told when this one waits."""
    return held_lock(
        corpus_folder / ".locks" / "__corpus__.lock", f"another update, build or prune of {corpus_folder.name}", on_wait
    )


@contextmanager
def held_lock(lock: Path, holder: str, on_wait):
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not try_lock(fd, fcntl.LOCK_EX):
            if on_wait:
                on_wait(f"waiting for {holder} to finish (lock {lock.name})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def reading(link: Path, attempts: int = 50):
    """Resolve `link` to its version folder and hold that version's reader lock while the caller reads it.

    A version pruned between resolving and locking is noticed (its folder is gone) and the link resolved again.
    """
    for _ in range(attempts):
        real = Path(link).resolve()
        if Path(link).is_symlink() and not real.is_relative_to((Path(link).parent / ".versions").resolve()):
            raise corrupt(
                Path(link), "its version link points outside its index folder", "rag index build with the same options"
            )
        try:
            fd = os.open(real / READERS, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        if fd is None:
            if (real / MANIFEST).exists():  # a folder without a reader lock (copied by hand): read it as it is
                yield real
                return
            if not Path(link).exists():
                raise IndexMissing(f"no index at {link}")
            continue  # pruned while we resolved it
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if (real / MANIFEST).exists():
                yield real
                return
        finally:
            os.close(fd)
    raise IndexMissing(f"the index at {link} kept changing while it was read; try again")


# ---------------------------------------------------------------- pruning and stale entries


def version_folders(target: Path) -> list[Path]:
    """The complete versions of one index name, oldest first."""
    pattern = re.compile(re.escape(target.name) + r"-\d{8}-\d{6}-[\d-]+$")
    versions = target.parent / ".versions"
    return sorted((p for p in versions.glob(f"{target.name}-*") if pattern.match(p.name)), key=lambda p: p.name)


def prune_versions(target: Path, keep: int = KEEP_VERSIONS) -> list[Path]:
    """Remove all but the newest `keep` versions (never the current one, never one a reader holds). Call it
    while holding the build lock. Returns the versions removed."""
    current = Path(target).resolve()
    removed = []
    for old in version_folders(target)[:-keep]:
        if old == current:
            continue
        try:
            fd = os.open(old / READERS, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        try:
            if fd is not None and not try_lock(fd, fcntl.LOCK_EX):
                continue  # a reader is loading it; a later build removes it
            trash = old.parent / f".trash-{old.name}"
            os.rename(old, trash)  # readers that resolved it see it gone and resolve the link again
            shutil.rmtree(trash, ignore_errors=True)
            removed.append(old)
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def remove_stale(target: Path) -> list[Path]:
    """Remove `.tmp-*`, `.link-*` and `.trash-*` left by killed builds: those of this name (whose build lock the
    caller holds) and those of any other name whose build lock is free (so no build of it is running)."""
    corpus_dir = target.parent
    candidates = list(corpus_dir.glob(".link-*")) + list((corpus_dir / ".versions").glob(".*-*"))
    removed = []
    for path in candidates:
        m = STALE.match(path.name)
        if not m:
            continue
        name = m.group(2)
        if name != target.name:
            fd = os.open(lock_file(corpus_dir / name), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                if not try_lock(fd, fcntl.LOCK_EX):
                    continue  # that name is being built right now
                delete(path)
            finally:
                os.close(fd)
        else:
            delete(path)
        removed.append(path)
    return removed


def delete(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
