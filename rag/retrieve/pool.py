"""The one process-wide cache of open retrievers (`RetrieverPool`), shared by the agent and the service.

`open_retriever(settings)` is the way in; the pool reopens an index that was rebuilt on disk.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rag.config import RagError
from rag.index.store import index_path
from rag.index.update import hold_version
from rag.retrieve.retriever import Retriever
from rag.retrieve.settings import RetrievalSettings

RETRY_REOPEN_S = 5.0  # after a failed reopen of a rebuilt index, serve the old one this long before retrying


@dataclass
class PoolEntry:
    retriever: Retriever
    link: Path | None  # indexes/<corpus>/<name>: the symlink a rebuild flips (None for bm25)
    version: str | None  # the version folder this retriever loaded
    loaded_at: float = field(default_factory=time.time)
    requests: int = 0
    retry_at: float = 0.0  # after a failed reopen, when to try again
    lease: object = None  # the version's reader lock, held while this entry serves it (prune keeps that version)

    def is_current(self) -> bool:
        """True while the index symlink still points at the version this retriever loaded (one readlink)."""
        return self.link is None or os.path.realpath(self.link) == self.version


def index_link(retriever: Retriever) -> tuple[Path | None, str | None]:
    """(the index symlink, the version folder it pointed at when loaded) of a retriever; (None, None) for bm25."""
    if retriever.loaded is None:
        return None, None
    link = index_path(retriever.corpus.safe_name, retriever.settings.index_spec.name)
    return link, str(retriever.loaded.path)


class RetrieverPool:
    """Retrievers keyed by settings, opened once and shared; swapped when their index is rebuilt on disk.

    A rebuild writes a new version folder and flips the index symlink atomically. Each get() compares the
    symlink's target with the version the cached retriever loaded; on a change it opens the new version and
    swaps the entry. Searches already running keep the old retriever object (fully in memory), and requests that
    arrive while the new version loads are served by the old one, so every search sees one whole index and none
    waits for the reload. If opening the new version fails, the old one keeps serving and a later get() retries.
    """

    def __init__(self, build_missing: bool = True, update: bool = True):
        self.build_missing = build_missing
        self.update = update  # bring a changed folder's index up to date when opening it (Retriever.open)
        self.entries: dict[tuple, PoolEntry] = {}
        self.lock = threading.Lock()
        self.key_locks: dict[tuple, threading.Lock] = {}
        self.opens = self.swaps = self.swap_failures = 0

    def key_lock(self, key: tuple) -> threading.Lock:
        with self.lock:
            return self.key_locks.setdefault(key, threading.Lock())

    def use(self, entry: PoolEntry, settings: RetrievalSettings) -> Retriever:
        with self.lock:
            entry.requests += 1
        r = entry.retriever
        if r.settings == settings:
            return r
        return replace(r, settings=settings, timings={})  # same loaded parts; this request's k, fusion and weight

    def get(
        self, settings: RetrievalSettings, progress=None, build_missing: bool | None = None, update: bool | None = None
    ) -> Retriever:
        """The current retriever for these settings: opened on first use, reopened after a rebuild on disk."""
        settings = settings.validated()
        build = self.build_missing if build_missing is None else build_missing
        update = self.update if update is None else update
        key = settings.pool_key
        entry = self.entries.get(key)
        if entry is not None and (entry.is_current() or time.monotonic() < entry.retry_at):
            return self.use(entry, settings)
        lock = self.key_lock(key)
        if entry is not None and not lock.acquire(blocking=False):
            return self.use(entry, settings)  # another request is opening the new version; the old one serves
        if entry is None:
            lock.acquire()  # first use: wait for the one opener
        try:
            entry = self.entries.get(key)
            if entry is not None and entry.is_current():
                return self.use(entry, settings)
            try:
                retriever = Retriever.open(settings, progress=progress, build_missing=build, update=update)
            except RagError:
                if entry is None:
                    raise
                self.swap_failures += 1  # keep serving the whole old index; try again in a few seconds
                entry.retry_at = time.monotonic() + RETRY_REOPEN_S
                return self.use(entry, settings)
            link, version = index_link(retriever)
            self.opens += 1
            self.swaps += entry is not None
            self.entries[key] = new = PoolEntry(retriever, link, version, lease=hold_version(version))
            return self.use(new, settings)
        finally:
            lock.release()

    def loaded(self) -> list[dict]:
        return [
            {
                **entry.retriever.description,
                "version": Path(entry.version).name if entry.version else None,
                "loaded_at": round(entry.loaded_at, 3),
                "requests": entry.requests,
            }
            for entry in list(self.entries.values())
        ]


DEFAULT_POOL = RetrieverPool()


def open_retriever(
    settings: RetrievalSettings | None = None,
    *,
    build_missing: bool | None = None,
    update: bool | None = None,
    progress=None,
    pool: RetrieverPool | None = None,
) -> Retriever:
    """A retriever from the process-wide cache (or `pool`); the CLI, the agent and the service all come here.

    build_missing: build an index that is not on disk yet; update: update a changed folder's index first
    (None = the pool's own setting for either)."""
    return (pool or DEFAULT_POOL).get(settings or RetrievalSettings(), progress, build_missing, update)
