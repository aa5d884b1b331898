"""The service's retriever pool: rag.retrieve.RetrieverPool bounded as an LRU, with builds gated by the operator.

- At most `max_open` retrievers stay open, and their estimated memory stays under `max_memory_mb`; the least
  recently used is dropped first (searches running on it keep their reference and finish).
- An index (FAISS, or the BM25 cache) that is not on disk is built only when the operator allowed builds, one
  build per settings at a time and at most `max_builds` builds at once; more at once get Busy (HTTP 503).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from rag.config import RagError
from rag.data.corpus import NAMED_CORPORA, load_corpus
from rag.index.store import IndexMissing
from rag.retrieve import RetrievalSettings, Retriever, RetrieverPool
from rag.retrieve.build import DENSE_PART, build_stored, missing_parts
from rag.serve.policy import Busy

MISSING_TTL = 30.0  # seconds a "not built" answer is remembered when builds are off (an operator build shows after it)


def estimated_bytes(retriever: Retriever) -> int:
    """A rough resident size of an open retriever: its index files, its passages' text, and BM25's arrays."""
    m = retriever.loaded.manifest if retriever.loaded else {}
    text = sum(len(p.text) + len(p.title) for p in retriever.passages)
    return int(m.get("bytes") or m.get("index_bytes") or 0) + 3 * text + (4 * text if retriever.bm25 else 0)


class ServePool(RetrieverPool):
    def __init__(
        self, *, build_missing: bool = False, max_open: int = 8, max_memory_mb: int = 4096, max_builds: int = 1
    ):
        super().__init__(build_missing=build_missing, update=build_missing)  # an update is a build: operator's call
        self.max_open = max(1, max_open)
        self.max_bytes = max_memory_mb * 2**20
        self.builds = threading.BoundedSemaphore(max(1, max_builds))
        self.build_locks: dict[tuple, threading.Lock] = {}
        self.used: OrderedDict[tuple, None] = OrderedDict()
        self.sizes: dict[tuple, int] = {}
        self.builds_done = self.builds_refused = self.evictions = 0
        self.named_hashes: dict[str, str] = {}
        self.known_missing: dict[tuple, tuple[float, str]] = {}  # pool key -> (when, what): 404s answered from here

    # ------------------------------------------------------------ builds, only when allowed
    def missing(self, settings: RetrievalSettings) -> str | None:
        """The first stored part (rag.retrieve.build.STORED_PARTS) that must be built before these settings can be
        served, or None."""
        return next(missing_parts(settings, lambda: self.content_hash(settings.corpus)), None)

    def content_hash(self, corpus: str) -> str:
        """A corpus's content hash; a named corpus's is read once (it never changes while serving), a folder's
        each time."""
        if corpus in self.named_hashes:
            return self.named_hashes[corpus]
        digest = load_corpus(corpus).content_hash
        if corpus in NAMED_CORPORA:
            self.named_hashes[corpus] = digest
        return digest

    def servable(self, settings: RetrievalSettings) -> bool:
        """True when a request for these (policy-checked) settings would be served now: open, built on disk, or
        buildable because the operator allows builds. What /v1/models, /config and the page offer."""
        if self.build_missing or settings.pool_key in self.entries:
            return True
        try:
            return self.missing(settings) is None
        except RagError:  # the corpus is not available here
            return False

    def build(self, settings: RetrievalSettings, what: str) -> None:
        with self.lock:
            lock = self.build_locks.setdefault(settings.pool_key, threading.Lock())
        with lock:  # requests for the same settings wait for the one build
            if self.missing(settings) is None:
                return
            if not self.builds.acquire(blocking=False):
                self.builds_refused += 1
                raise Busy("the server is already building as many indexes as it may; retry in a minute")
            try:
                corpus = load_corpus(settings.corpus)
                while (what := self.missing(settings)) is not None:
                    build_stored(corpus, settings.index_spec, (what,))
                    self.builds_done += 1
            finally:
                self.builds.release()

    def get(
        self, settings: RetrievalSettings, progress=None, build_missing: bool | None = None, update: bool | None = None
    ) -> Retriever:
        settings = settings.validated()
        key = settings.pool_key
        build = self.build_missing if build_missing is None else build_missing
        if not build and key not in self.entries:
            seen = self.known_missing.get(key)
            if seen and time.monotonic() - seen[0] < MISSING_TTL:  # a repeated 404 costs a dict lookup, no corpus read
                raise missing_error(settings, seen[1])
        if key not in self.entries and (what := self.missing(settings)) is not None:
            if not build:
                with self.lock:
                    if len(self.known_missing) > 1024:
                        self.known_missing.clear()
                    self.known_missing[key] = (time.monotonic(), what)
                raise missing_error(settings, what)
            self.build(settings, what)
        retriever = super().get(settings, progress, build_missing=False, update=update)
        self.touch(key, retriever)
        return retriever

    # ------------------------------------------------------------ the LRU bound
    def touch(self, key: tuple, retriever: Retriever) -> None:
        with self.lock:
            self.used[key] = None
            self.used.move_to_end(key)
            if key not in self.sizes:
                self.sizes[key] = estimated_bytes(retriever)
            for old in list(self.used):
                if old == key or (len(self.entries) <= self.max_open and self.memory() <= self.max_bytes):
                    break
                dropped = self.entries.pop(old, None)
                if getattr(dropped, "lease", None) is not None:
                    dropped.lease.close()  # its version's reader lock: prune may now remove that version
                self.used.pop(old, None)
                self.sizes.pop(old, None)
                self.evictions += 1

    def memory(self) -> int:
        return sum(self.sizes.get(k, 0) for k in self.entries)

    def loaded(self) -> list[dict]:
        return [
            {**row, "estimated_mb": round(self.sizes.get(key, 0) / 2**20, 1)}
            for key, row in zip(list(self.entries), super().loaded())
        ]


def missing_error(settings: RetrievalSettings, what: str) -> RagError:
    if what == DENSE_PART:
        spec = settings.index_spec
        cmd = spec.rebuild_command(settings.corpus)
        return IndexMissing(
            f"index {spec.name} "
            f"for corpus {settings.corpus} is not built and this server does not build on request; "
            f"the operator can run `{cmd}` or start the server with --build-missing"
        )
    return IndexMissing(
        f"the BM25 index of corpus {settings.corpus} is not built and this server does not build "
        "on request; the operator can start the server with --build-missing (or --warm it)"
    )
