"""`rag serve --watch`: served folder corpora stay in step with their files.

watchfiles (the Rust `notify` watcher behind uvicorn's --reload; inotify on Linux, no polling) reports changed
paths in debounced batches. For each folder corpus touched by a batch, every stored index of it is updated in this
background thread (rag.index.update.update_indexes: only the changed passages are encoded) and swapped in the way a
rebuild is: the pool sees the index symlink move and opens the new version on the next request, while requests in
between are served by the old one. Open BM25-only retrievers of that corpus are dropped, so the next request reads
the new text.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from rag.config import RagError
from rag.data.corpus import load_corpus
from rag.index.update import index_links, update_indexes

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
    """Update one folder corpus's stored indexes and drop its open BM25-only retrievers; what changed, per index."""
    corpus = load_corpus(folder)
    rows = update_indexes(corpus) if index_links(corpus.safe_name) else []
    with pool.lock:
        for key, entry in list(pool.entries.items()):
            if entry.link is None and entry.retriever.settings.corpus == folder:
                pool.entries.pop(key, None)
    return {"corpus": corpus.name, "indexes": rows}


class Watcher:
    """A daemon thread watching the served folders until stop()."""

    def __init__(self, corpora: dict[str, str], pool, debounce_ms: int = 400):
        self.corpora, self.pool, self.debounce_ms = dict(corpora), pool, debounce_ms
        self.stop_event = threading.Event()
        self.updates = 0
        self.thread = threading.Thread(target=self.run, name="rag-watch", daemon=True)

    def start(self) -> "Watcher":
        if self.corpora:
            self.thread.start()
        return self

    def run(self) -> None:
        from watchfiles import watch

        folders = list(self.corpora.values())
        for changes in watch(*folders, stop_event=self.stop_event, debounce=self.debounce_ms, raise_interrupt=False):
            for folder in changed_corpora({path for _, path in changes}, self.corpora):
                try:
                    result = refresh(folder, self.pool)
                except (RagError, OSError) as exc:  # the old version keeps serving; the next change retries
                    log.warning("watch: could not update a served folder: %s", type(exc).__name__)
                    continue
                self.updates += 1
                encoded = sum(r.get("encoded", 0) for r in result["indexes"])
                log.info(
                    "watch: updated %d index(es) of a served folder, %d passages encoded",
                    len(result["indexes"]),
                    encoded,
                )

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)
