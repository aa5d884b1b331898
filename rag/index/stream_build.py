"""The streaming index build: a corpus of any size in bounded memory, resumable after a kill.

    read passages lazily (rag.data.files.iter_jsonl) ─▶ encode a chunk ─▶ rows of vectors.f32 (a numpy.memmap)
                                                                 └▶ passages.jsonl, progress.json (atomic)
    after the last chunk: fit the reducer on a sample of rows ─▶ train IVF/PQ on a sample ─▶ add chunk by chunk
    ─▶ a sealed index version (rag.index.versions), which rag search opens like any other

Work in progress lives in indexes/<corpus>/.stream-build/: vectors.f32 (full-width float32 rows), passages.jsonl
(the passages encoded so far, in the stored form) and progress.json, rewritten atomically after every chunk with
the settings, the rows encoded, the passages file's length and the content hash of the passages read so far. A
killed build rerun with resume=True checks the settings and the corpus prefix, skips the finished rows, and goes
on from the last finished chunk. Neither the corpus text nor all the vectors are ever held at once: a chunk's
passages, a chunk of vectors and the fit samples are. Encoders that learn corpus statistics first (IDF pooling)
and reducers trained on pseudo-queries need the whole corpus in memory and are refused here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

from rag.config import VERSION, RagError, RagWarning, atomic_write_text, data_dir, index_dir, peak_rss_mb
from rag.data.corpus import NAMED_CORPORA, Passage, beir_passage, load_corpus, safe_corpus_name
from rag.data.files import iter_jsonl
from rag.data.limits import cap_passages
from rag.encoders import get_encoder
from rag.encoders.base import document_text
from rag.encoders.probe import make_probe
from rag.index.kinds import import_faiss, index_kind, set_search_params, train_rows
from rag.index.search_index import build_index, pack_bits
from rag.index.spec import DEFAULT_INDEX, IndexSpec
from rag.index.store import check_reduced_width, index_path
from rag.index.versions import build_lock, prune_versions, read_manifest, remove_stale, write_version
from rag.reduce import NEEDS_QUERIES, Reducer

CHUNK = 20_000  # passages per chunk: encoded, written to the memmap, recorded in progress.json
FIT_SAMPLE = 50_000  # rows the reducer is fitted on (all of them below this)
SETTINGS = ("corpus", "encoder", "backend", "dim", "reduce", "kind")  # what a resumed build must share
BUILD, VECTORS, PASSAGES, PROGRESS = ".stream-build", "vectors.f32", "passages.jsonl", "progress.json"


class BuildInterrupted(RagError):
    """Raised by stop_after (a test's way to stop a build after a chunk, as a kill would)."""


# ---------------------------------------------------------------- reading the corpus as a stream


def corpus_source(name_or_path: str) -> tuple[str, Path | None]:
    """(corpus name, its corpus.jsonl when it is a BEIR folder, read lazily; None: loaded whole, it is small)."""
    name = str(name_or_path)
    folder = data_dir() / name if name in ("scifact", "hotpotqa") else Path(name).expanduser()
    if name not in NAMED_CORPORA or name in ("scifact", "hotpotqa"):
        if (folder / "corpus.jsonl").is_file():
            return name, folder / "corpus.jsonl"
    return name, None


def iter_passages(name_or_path: str, block: int = 1000):
    """The corpus's passages one by one, as load_corpus gives them (capped by rag.data.limits), without holding them."""
    _, jsonl = corpus_source(name_or_path)
    if jsonl is None:
        yield from load_corpus(name_or_path).passages
        return
    rows = []
    for row in iter_jsonl(jsonl):
        rows.append(beir_passage(row, jsonl.parent))
        if len(rows) == block:
            yield from cap_passages(rows)
            rows = []
    yield from cap_passages(rows)


def count_lines(path: Path) -> int:
    """Non-empty lines of a file (the progress bar's total: about the passage count), read in 16 MB blocks."""
    lines, last = 0, b"\n"
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            lines += block.count(b"\n") - block.count(b"\n\n")
            last = block[-1:]
    return lines + (last != b"\n")


# ---------------------------------------------------------------- the work folder


def build_folder(corpus_name: str) -> Path:
    return index_dir() / safe_corpus_name(corpus_name) / BUILD


def rows(path: Path, start: int, stop: int, width: int, mode: str = "r") -> np.memmap:
    """Rows [start, stop) of the float32 vector file, mapped (unmap by dropping the reference)."""
    return np.memmap(path, np.float32, mode, offset=4 * width * start, shape=(stop - start, width))


def start_or_resume(folder: Path, settings: dict, resume: bool) -> dict:
    """The progress of the build in `folder`: resumed (settings checked) or started afresh."""
    progress_file = folder / PROGRESS
    if resume:
        if not progress_file.exists():
            raise RagError(
                f"--resume: no build in progress for corpus {settings['corpus']} (nothing at {folder}); "
                "run the same command without --resume to start one"
            )
        state = json.loads(progress_file.read_text())
        for key in SETTINGS:
            if state["settings"].get(key) != settings[key]:
                flag = "--index" if key == "kind" else f"--{key}"
                raise RagError(
                    f"--resume refused: the build in progress at {folder} has {flag} "
                    f"{state['settings'].get(key)}, this run asks for {flag} {settings[key]}; rerun with "
                    "the same settings, or without --resume to start over"
                )
        return state
    if progress_file.exists():
        rows_done = json.loads(progress_file.read_text()).get("encoded", 0)
        warnings.warn(
            f"discarded an unfinished build at {folder} ({rows_done:,} rows encoded); pass --resume to go "
            "on with such a build instead",
            RagWarning,
            stacklevel=3,
        )
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    (folder / VECTORS).touch()
    (folder / PASSAGES).touch()
    state = {
        "settings": settings,
        "encoded": 0,
        "chunks": 0,
        "passages_bytes": 0,
        "width": None,
        "prefix_hash": hashlib.sha256().hexdigest(),
        "encode_s": 0.0,
        "done": False,
    }
    atomic_write_text(progress_file, json.dumps(state))
    return state


def save_progress(folder: Path, state: dict) -> None:
    atomic_write_text(folder / PROGRESS, json.dumps(state))


# ---------------------------------------------------------------- encode: chunk by chunk into the memmap


def write_chunk(folder: Path, state: dict, batch: list[Passage], encoder, out, digest: str) -> None:
    """Encode one chunk, write its rows and passages, fsync both, then record it in progress.json."""
    start_s = time.perf_counter()
    vectors = np.asarray(encoder.encode([document_text(p) for p in batch], kind="document"), np.float32)
    if not np.isfinite(vectors).all():
        raise RagError(
            f"encoder {encoder.name} produced NaN or infinite vectors in rows {state['encoded']:,}..; "
            "check the encoder (a damaged checkpoint?) before building"
        )
    width, start = vectors.shape[1], state["encoded"]
    stop = start + len(batch)
    with open(folder / VECTORS, "r+b") as f:
        f.truncate(4 * width * stop)
    mapped = rows(folder / VECTORS, start, stop, width, "r+")
    mapped[:] = vectors
    mapped.flush()
    del mapped
    for p in batch:
        out.write((json.dumps(dataclasses.asdict(p)) + "\n").encode("utf-8"))
    out.flush()
    os.fsync(out.fileno())
    state.update(
        encoded=stop,
        chunks=state["chunks"] + 1,
        passages_bytes=out.tell(),
        width=width,
        prefix_hash=digest,
        encode_s=round(state["encode_s"] + time.perf_counter() - start_s, 3),
    )
    save_progress(folder, state)


def encode_stream(folder: Path, state: dict, encoder, chunk: int, progress=None, stop_after: int | None = None) -> str:
    """Encode every passage past the finished rows, chunk by chunk; return the corpus content hash (the same
    sha256 Corpus.content_hash computes). The passages before the finished rows are read and hashed only: a
    corpus whose beginning changed since the build started is refused."""
    corpus, done = state["settings"]["corpus"], state["encoded"]
    _, jsonl = corpus_source(corpus)
    total = count_lines(jsonl) if jsonl else 0
    changed = RagError(
        f"--resume refused: corpus {corpus} changed since the build began (its first {done:,} "
        "passages differ); run without --resume to start over"
    )
    hasher, seen, batch, chunks_now = hashlib.sha256(), 0, [], 0
    with open(folder / PASSAGES, "r+b") as out:
        out.truncate(state["passages_bytes"])
        out.seek(state["passages_bytes"])
        for p in iter_passages(corpus):
            hasher.update(f"{p.id}\0{p.title}\0{p.text}\n".encode())
            seen += 1
            if seen <= done:
                if seen == done and hasher.hexdigest() != state["prefix_hash"]:
                    raise changed
                continue
            batch.append(p)
            if len(batch) == chunk:
                write_chunk(folder, state, batch, encoder, out, hasher.hexdigest())
                batch, chunks_now = [], chunks_now + 1
                if progress:
                    progress("encoding", state["encoded"], max(total, state["encoded"]))
                if stop_after is not None and chunks_now >= stop_after:
                    raise BuildInterrupted(f"stopped after {chunks_now} chunks ({state['encoded']:,} rows), as asked")
        if seen < done:
            raise changed
        if batch:
            write_chunk(folder, state, batch, encoder, out, hasher.hexdigest())
    if progress:
        progress("encoding", state["encoded"], state["encoded"])
    state["done"] = True
    save_progress(folder, state)
    return hasher.hexdigest()


# ---------------------------------------------------------------- reduce, train, add: samples and chunks


def sample_rows(n: int, size: int, seed: int = 0) -> np.ndarray:
    """All rows when n <= size, else `size` of them, seeded and sorted."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def read_rows(folder: Path, n: int, width: int, pick: np.ndarray, chunk: int = CHUNK) -> np.ndarray:
    """The rows `pick` (sorted) of the vector file, mapping one chunk of it at a time: a sample spread over the
    whole file would otherwise leave most of the file's pages mapped (faults map their neighbours too), and they
    count in the process's resident set."""
    out = np.empty((len(pick), width), np.float32)
    bounds = np.searchsorted(pick, np.arange(0, n + chunk, chunk))
    for i, start in enumerate(range(0, n, chunk)):
        lo, hi = bounds[i], bounds[i + 1]
        if hi > lo:
            mapped = rows(folder / VECTORS, start, min(n, start + chunk), width)
            out[lo:hi] = mapped[pick[lo:hi] - start]
            del mapped
    return out


def index_stream(
    folder: Path, n: int, width: int, reducer: Reducer, kind: str, chunk: int, progress=None, seed: int = 0
):
    """The index of `kind` over all rows: trained on a sample (lists sized for n), emptied, then filled chunk by
    chunk. Returns the SearchIndex."""
    train = reducer.transform(read_rows(folder, n, width, sample_rows(n, train_rows(kind, n), seed)))
    index = build_index(train, kind, seed=seed, size_for=n)
    del train
    index.index.reset()
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        mapped = rows(folder / VECTORS, start, stop, width)
        x = reducer.transform(mapped)
        del mapped
        index.index.add(pack_bits(x, index.index.d) if index.entry.binary else x)
        if progress:
            progress("adding to the index", stop, n)
    set_search_params(kind, index.index)
    return index


def probe_arrays(folder: Path, n: int, width: int) -> dict[str, np.ndarray]:
    """The probe set (rag.encoders.probe): the same evenly spaced passages an in-memory build would pick."""
    pick = np.unique(np.linspace(0, n - 1, num=min(8, n)).astype(int))
    wanted, texts = set(pick.tolist()), []
    with open(folder / PASSAGES, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i in wanted:
                texts.append(document_text(Passage(**json.loads(line))))
    return make_probe(texts, read_rows(folder, n, width, pick), size=len(texts))


# ---------------------------------------------------------------- the whole build


def check_streamable(reduce: str, encoder=None, kind: str | None = None) -> None:
    """Refuse, before anything is encoded, what needs the whole corpus in memory: pseudo-query reducers, encoders
    fitted on every passage, and the index kind that keeps every float vector beside its codes."""
    if kind is not None and not index_kind(kind).streamable:
        raise RagError(
            f"--index {kind} keeps every float vector beside its codes, which a streaming build does not "
            "hold (refused before encoding); use ivf-pq, or build without --stream"
        )
    if reduce in NEEDS_QUERIES:
        raise RagError(
            f"--reduce {reduce} trains on pseudo-queries drawn from the whole corpus, which a streaming "
            "build does not hold; use --reduce pca (or truncate, whiten, itq), or build without --stream"
        )
    if getattr(encoder, "pooling", "mean") != "mean":
        raise RagError(
            f"encoder {encoder.name} learns corpus statistics (IDF weights) from every passage before it "
            "encodes one, which a streaming build does not hold; use minilm, smollm2-input-mean or "
            "lm:<dir> (mean pooling), or build without --stream"
        )


def stream_build(
    corpus: str,
    spec: IndexSpec = DEFAULT_INDEX,
    chunk: int = CHUNK,
    resume: bool = False,
    progress=None,
    stop_after: int | None = None,
) -> dict:
    """Build and store one index over a corpus read as a stream (see the module docstring). Returns its manifest
    with the path and this run's figures: resumed_from (rows already encoded), encode/fit/index/write seconds
    and the process's peak RSS. progress(stage, done, total) reports "encoding" and "adding to the index";
    stop_after=k raises BuildInterrupted after k chunks of this run (tests stand in for a kill with it)."""
    spec = spec.validated()
    encoder_name, dim, kind, reduce, backend = spec.encoder, spec.dim, spec.kind, spec.reduce, spec.backend
    check_streamable(reduce, kind=kind)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise RagError(f"--chunk must be a positive whole number of passages, got {chunk!r}")
    name, _ = corpus_source(corpus)
    settings = {"corpus": name, "encoder": encoder_name, "backend": backend, "dim": dim, "reduce": reduce, "kind": kind}
    folder = build_folder(name)
    started = time.perf_counter()
    with build_lock(folder):
        state = start_or_resume(folder, settings, resume)
        encoder = get_encoder(encoder_name, backend)
        check_streamable(reduce, encoder)
        resumed_from = state["encoded"]
        corpus_hash = encode_stream(folder, state, encoder, chunk, progress, stop_after)
        n, width, encode_peak = state["encoded"], state["width"], peak_rss_mb()
        if n == 0:
            raise RagError(f"corpus {name} holds no passages")
        t = time.perf_counter()
        reducer = Reducer.fit(read_rows(folder, n, width, sample_rows(n, FIT_SAMPLE)), dim, reduce)
        check_reduced_width(reducer, dim, encoder_name)
        fit_s, t = time.perf_counter() - t, time.perf_counter()
        index = index_stream(folder, n, width, reducer, kind, chunk, progress)
        index_s, t = time.perf_counter() - t, time.perf_counter()
        figures = {
            "corpus": name,
            "corpus_safe_name": safe_corpus_name(name),
            "corpus_hash": corpus_hash,
            "encoder": encoder_name,
            "backend": backend,
            "dim": dim,
            "reduce": reduce,
            "kind": kind,
            "metric": "inner_product",
            "vectors": n,
            "build_s": round(index_s, 4),
            "device": index.device,
            "streamed": {
                "chunk": chunk,
                "chunks": state["chunks"],
                "encode_s": state["encode_s"],
                "fit_s": round(fit_s, 3),
                "fit_rows": min(n, FIT_SAMPLE),
                "peak_rss_mb_encode": encode_peak,
            },
        }
        target = save_version(folder, figures, reducer, index)
    return {
        **read_manifest(target),
        "path": str(target),
        "resumed_from": resumed_from,
        "write_s": round(time.perf_counter() - t, 3),
        "run_s": round(time.perf_counter() - started, 3),
        "peak_rss_mb": peak_rss_mb(),
        "reused": False,
    }


def save_version(folder: Path, figures: dict, reducer: Reducer, index) -> Path:
    """Store the finished build as a sealed index version (rag.index.versions), remove the work folder, and return the
    index's link (indexes/<corpus>/<name>)."""
    faiss = import_faiss()
    n, width = figures["vectors"], json.loads((folder / PROGRESS).read_text())["width"]
    target = index_path(figures["corpus_safe_name"], IndexSpec.from_manifest(figures).name)
    raw = faiss.index_gpu_to_cpu(index.index) if index.device == "cuda-faiss" else index.index
    write_index = faiss.write_index_binary if index.entry.binary else faiss.write_index
    write_index(raw, str(folder / "index.faiss"))  # written straight to disk: no serialized copy in memory
    size = (folder / "index.faiss").stat().st_size
    manifest = {
        **figures,
        "index_bytes": size,
        "bytes_per_vector": size / max(1, n),
        "rag_version": VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }

    def write_files(version: Path) -> None:
        reducer.save(version)
        np.savez(version / "probe.npz", **probe_arrays(folder, n, width))
        for name in ("index.faiss", PASSAGES):  # hard links, no copies: the work folder goes once sealed
            os.link(folder / name, version / name)

    with build_lock(target):
        remove_stale(target)
        write_version(target, write_files, manifest)
        prune_versions(target)
    shutil.rmtree(folder, ignore_errors=True)
    return target
