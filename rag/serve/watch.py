"""`rag serve --watch`: served folder corpora stay in step with their files.

watchfiles (the Rust `notify` watcher behind uvicorn's --reload; inotify on Linux, no polling) reports changed
paths in debounced batches. For each folder corpus touched by a batch, every stored index of it is updated in this
background thread (rag.index.update.update_indexes: only the changed passages are encoded) and swapped in the way a
rebuild is: the pool sees the index symlink move and opens the new version on the next request, while requests in
between are served by the old one. Where an open retriever of that corpus uses BM25 (bm25 or hybrid), the new text's
BM25 is built too, so that the swapped-in version is served even when builds on request are off; open BM25-only
retrievers of that corpus are dropped, so the next request reads the new text. Files are read under the same per-document budget as a build (rag.data.budget), in this thread, so a
hostile file never stalls the event loop; any exception is counted in `Watcher.health()` and the loop goes on.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from rag.data.corpus import folder_warnings, load_corpus
from rag.index.update import index_links, update_indexes
from rag.retrieve.bm25 import BM25

log = logging.getLogger("rag.serve")


def changed_corpora(paths: set[str], corpora: dict[str, str]) -> list[str]:
    """The served folders (paths) that hold any of the changed paths."""
    out = []
    for folder in corpora.values():
        root = Path(folder)
        if any(Path(p) == root or Path(p).is_relative_to(root) for p in paths):
            out.append(folder)
    return out


def refresh(folder: str, pool) -> dict:
    """Update one folder corpus's stored indexes and drop its open BM25-only retrievers; what changed, per index,
    and the folder's warnings (files skipped, with the reason)."""
    corpus = load_corpus(folder)
    rows = update_indexes(corpus) if index_links(corpus.safe_name) else []
    with pool.lock:
        entries = [(key, e) for key, e in pool.entries.items() if e.retriever.settings.corpus == folder]
    if any(e.retriever.bm25 is not None for _, e in entries):
        BM25.for_corpus(corpus)  # the new text's BM25, as an update encodes
    with pool.lock:
        for key, entry in entries:
            if entry.link is None:
                pool.entries.pop(key, None)
    return {"corpus": corpus.name, "indexes": rows, "warnings": folder_warnings(corpus)}


class Watcher:
    """A daemon thread watching the served folders until stop(). It cannot die of a bad file: any exception while
    updating a folder is counted and logged once per kind and folder (the old version keeps serving, the next change
    retries), and if the watch itself fails it is restarted after a pause. `health()` says how it stands, for
    /health and /metrics."""

    def __init__(self, corpora: dict[str, str], pool, debounce_ms: int = 400, retry_s: float = 2.0):
        self.corpora, self.pool, self.debounce_ms, self.retry_s = dict(corpora), pool, debounce_ms, retry_s
        self.stop_event = threading.Event()
        self.updates = 0
        self.errors = 0  # exceptions caught in the loop, all kinds
        self.restarts = 0  # times the watch itself failed and was started again
        self.last_error = ""  # "<served name>: <exception kind>" of the latest one
        self.failing: set[str] = set()  # served names whose latest update failed
        self.logged: set[tuple[str, str]] = set()  # (served name, exception kind or folder warning) already logged
        self.thread = threading.Thread(target=self.run, name="rag-watch", daemon=True)

    def start(self) -> "Watcher":
        if self.corpora:
            self.thread.start()
        return self

    def name_of(self, folder: str) -> str:
        """The served name of a folder (logs and health never show the real path)."""
        return next((name for name, path in self.corpora.items() if path == folder), "a served folder")

    def record(self, where: str, exc: BaseException) -> None:
        self.errors += 1
        self.last_error = f"{where}: {type(exc).__name__}"
        key = (where, type(exc).__name__)
        if key in self.logged:
            log.debug("watch: %s failed again (%s)", where, type(exc).__name__)
            return
        self.logged.add(key)
        log.warning("watch: could not update %s (%s); the old version keeps serving", where, type(exc).__name__)

    def handle(self, paths: set[str]) -> None:
        """Update each served folder that holds a changed path."""
        for folder in changed_corpora(paths, self.corpora):
            name = self.name_of(folder)
            try:
                result = refresh(folder, self.pool)
            except Exception as exc:  # a bad file, a full disk, a bug: the loop goes on either way
                self.failing.add(name)
                self.record(name, exc)
                continue
            self.failing.discard(name)
            self.updates += 1
            for line in result.get("warnings", []):  # a skipped file is said once, not at every later change
                if (name, line) not in self.logged:
                    self.logged.add((name, line))
                    log.warning("watch: %s: %s", name, line)
            encoded = sum(r.get("encoded", 0) for r in result["indexes"])
            log.info("watch: updated %d index(es) of %s, %d passages encoded", len(result["indexes"]), name, encoded)

    def run(self) -> None:
        from watchfiles import watch

        folders = list(self.corpora.values())
        while not self.stop_event.is_set():
            try:
                for changes in watch(
                    *folders, stop_event=self.stop_event, debounce=self.debounce_ms, raise_interrupt=False
                ):
                    self.handle({path for _, path in changes})
                return
            except Exception as exc:  # the watch itself failed (a folder removed, too many inotify watches)
                self.restarts += 1
                self.record("the folder watch", exc)
                self.stop_event.wait(min(60.0, self.retry_s * 2 ** min(self.restarts, 5)))

    def health(self) -> dict:
        """How the watcher stands: `ok` is true while its thread runs and no served folder's latest update failed."""
        alive = self.thread.is_alive()
        return {
            "ok": alive and not self.failing,
            "running": alive,
            "updates": self.updates,
            "errors": self.errors,
            "restarts": self.restarts,
            "failing": sorted(self.failing),
            "last_error": self.last_error,
        }

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
