"""Building what retrieval reads from disk: the one way `rag index build`, the service's pool (a build on request)
and `Retriever.open` (an index that is missing) build a stored index.

`build_stored(corpus, spec, parts, method)` builds the named parts of one corpus at one `IndexSpec`:

- "index": the stored FAISS index (rag.index.store.build_and_save: encode or reuse the cached vectors, reduce to d,
  store a sealed version atomically; one build per index name at a time, a waiting second builder reuses the first
  one's index);
- "sparse": the BM25 cache of the corpus's content (rag.retrieve.bm25).

A retriever kind reads the parts whose side it runs (`parts_read_by(kind)`: dense reads "index", sparse reads
"sparse", hybrid both), so the pool builds what a request's retriever needs and `rag index build` builds both (a
server that does not build on request can then serve every retriever of that index). The in-memory build holds the
corpus's lock (rag.index.versions.corpus_lock) so that an update or prune of the same corpus goes first.

`BuildMethod` says how: engine "local" in this process, in memory or, with stream=True, as a bounded-memory
resumable stream (rag.index.stream_build); engine "ray" encodes with Ray Data and builds shards with Ray tasks
(rag.index.shards). The streamed and sharded builds write the dense index only: BM25 holds every passage's tokens
in memory at once, which those builds exist to avoid.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator

from rag.config import RagError, index_dir
from rag.data.corpus import Corpus, folder_warnings, load_corpus, safe_corpus_name
from rag.index.spec import DEFAULT_INDEX, IndexSpec
from rag.index.store import MANIFEST, build_and_save, index_path
from rag.index.stream_build import CHUNK, stream_build
from rag.index.versions import corpus_lock
from rag.retrieve.bm25 import BM25, bm25_stored
from rag.retrieve.settings import RetrievalSettings, RetrieverKind


@dataclass(frozen=True)
class StoredPart:
    """One thing a retriever reads from disk: the side of a retriever kind that reads it, and what it is."""

    side: str  # the RetrieverKind flag ("dense" or "sparse") of the retrievers that read it
    description: str


STORED_PARTS: dict[str, StoredPart] = {
    "index": StoredPart("dense", "the FAISS index at the spec's encoder, d, kind and reducer"),
    "sparse": StoredPart("sparse", "the BM25 cache of the corpus's content"),
}
# the table's names by the side that reads them
DENSE_PART = next(name for name, part in STORED_PARTS.items() if part.side == "dense")
SPARSE_PART = next(name for name, part in STORED_PARTS.items() if part.side == "sparse")


@dataclass(frozen=True)
class BuildEngine:
    """One build engine: what it does, and whether it writes shards (rag.index.shards) instead of one index."""

    description: str
    sharded: bool


BUILD_ENGINES: dict[str, BuildEngine] = {
    "local": BuildEngine("one process, one index", sharded=False),
    "ray": BuildEngine("Ray Data encodes, Ray tasks build --shards S shards", sharded=True),
}


def parts_read_by(kind: RetrieverKind) -> tuple[str, ...]:
    """The stored parts a retriever of this kind reads, in build order."""
    return tuple(name for name, part in STORED_PARTS.items() if getattr(kind, part.side))


def missing_parts(settings: RetrievalSettings, content_hash: Callable[[], str]) -> Iterator[str]:
    """The parts these (validated) settings read that are not on disk yet, in build order, each looked at only when
    the one before it is asked for. content_hash() gives the corpus's content hash; it is asked only for the sparse
    side (hashing a folder reads it)."""
    for name in parts_read_by(settings.kind):
        if STORED_PARTS[name].side == "dense":
            stored = (index_path(safe_corpus_name(settings.corpus), settings.index_spec.name) / MANIFEST).exists()
        else:
            stored = bm25_stored(content_hash())
        if not stored:
            yield name


@dataclass(frozen=True)
class BuildMethod:
    """How an index is built: `engine` (BUILD_ENGINES); with a sharded engine, `shards` and the cluster `address`;
    otherwise `stream` (bounded memory) and `resume` (go on with a killed stream build; implies stream) with `chunk`
    passages per chunk."""

    engine: str = "local"
    shards: int = 2
    address: str | None = None
    stream: bool = False
    resume: bool = False
    chunk: int = CHUNK

    @property
    def sharded(self) -> bool:
        """True for an engine that writes shards; a RagError naming the engines for an unknown one."""
        if self.engine not in BUILD_ENGINES:
            raise RagError(f"unknown --engine {self.engine!r}; choose one of: {', '.join(BUILD_ENGINES)}")
        return BUILD_ENGINES[self.engine].sharded


DEFAULT_BUILD = BuildMethod()  # engine local, in memory: what `rag index build` does without options


def build_stored(
    corpus: Corpus | str,
    spec: IndexSpec = DEFAULT_INDEX,
    parts: tuple[str, ...] = tuple(STORED_PARTS),
    method: BuildMethod = DEFAULT_BUILD,
    progress=None,
    on_wait=None,
    on_warning=None,
) -> dict:
    """Build the stored `parts` of a corpus (a loaded Corpus, or its name or path) at `spec`, the way `method` says;
    returns what was built: for an in-memory build the index's manifest (with "path" and "reused"; only "corpus"
    when the index is not among the parts) plus "wall_s" and "invalid_utf8"; the streamed build's manifest and
    figures; or the sharded build's summary (those two write the dense index whatever the parts).

    progress(stage, done, total) is told how encoding goes; on_wait(message) when the corpus's lock makes this build
    wait; on_warning(line) is given rag.data.corpus.folder_warnings: files not read or read partly, unsupported
    extensions, a cap, bad bytes."""
    for name in parts:
        if name not in STORED_PARTS:
            raise RagError(f"unknown stored part {name!r}; choose from: {', '.join(STORED_PARTS)}")
    if DENSE_PART in parts:  # fail fast, before reading anything; BM25 alone does not depend on the spec
        spec = spec.validated()
    if method.sharded:
        return build_sharded_index(corpus, spec, method)
    if method.stream or method.resume:  # the stream reads the corpus itself, by its name or path
        name = corpus if isinstance(corpus, str) else corpus.name
        return stream_build(name, spec, chunk=method.chunk, resume=method.resume, progress=progress)
    started = time.perf_counter()
    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    for line in folder_warnings(c) if on_warning else ():
        on_warning(line)
    built: dict = {"corpus": c.name, "reused": False}
    stage = f"encoding {c.name} with {spec.encoder}"
    with corpus_lock(index_dir() / c.safe_name, on_wait=on_wait):  # an update or prune of this corpus goes first
        if DENSE_PART in parts:
            encoding = (lambda done, total: progress(stage, done, total)) if progress else None
            built = build_and_save(c, spec, progress=encoding)
        if SPARSE_PART in parts:
            BM25.for_corpus(c)
    built["invalid_utf8"] = c.invalid_utf8
    built["wall_s"] = round(time.perf_counter() - started, 2)  # reading, encoding and every part
    return built


def build_sharded_index(corpus: Corpus | str, spec: IndexSpec, method: BuildMethod) -> dict:
    """The Ray build: a missing extra is one line before the corpus is read; the summary of the shards written."""
    from rag.index.shards import build_sharded, import_ray

    import_ray()
    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    return build_sharded(c, spec, shards=method.shards, address=method.address)
