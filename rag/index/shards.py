"""Sharded indexes for when one machine is not enough: Ray encodes and builds, shards answer, the top-k is merged.

Build (`build_sharded`, `rag index build --engine ray --shards S [--address ...]`):
  - the corpus is encoded with Ray Data `map_batches` over a pool of encoder actors (one model per actor), unless
    the embedding cache already holds it; the vectors go into that cache, so a single build reuses them;
  - the reducer is fitted once on all documents (as in the single build), the rows are cut into S contiguous
    parts, and each part's FAISS index is built by a Ray task;
  - each shard is stored like a single index (rag.index.store.write_index_dir, atomic, with checksums) under
    indexes/<corpus>/<name>-shards<S>/shard-<i>/, holding its own passages, reducer and a manifest that says
    which shard it is, of how many, and the row it starts at.
Search (`ShardSet`): every shard's manifest must agree with shard-0 on corpus, encoder, d, reducer (its
checksum), kind and shard count, or the set is refused. engine="local" opens every shard in this process;
engine="ray" puts each shard in a Ray actor (on whichever machine has room). A query fans out, each shard
answers its top-k with global row numbers, and the merge keeps the best k. A shard that does not answer is an
error naming it, unless allow_partial, where the answer lists which shards answered.

Ray is imported only here and only when engine="ray" is asked for; it is the `scale` extra.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import numpy as np

from rag.config import VERSION, RagError, index_dir
from rag.data.corpus import Corpus, Passage
from rag.encoders import get_encoder
from rag.encoders.base import document_text
from rag.encoders.cache import cached_embeddings, embedding_cache_dir, fit_state, save_npy, with_state
from rag.index.kinds import INDEX_TABLE, import_faiss, index_kind, set_search_params, train_rows
from rag.index.search_index import SearchIndex, build_index
from rag.index.spec import DEFAULT_INDEX, IndexSpec
from rag.index.store import IndexMismatch, load_index_dir
from rag.index.versions import IndexMissing, read_manifest, write_version
from rag.reduce import Reducer, fit_for_corpus

ENGINES = {"local": "every shard opened in this process", "ray": "every shard in a Ray actor"}
EXTRA_HINT = "install the scale extra: pip install -e '.[scale]'"
AGREE = ("corpus_hash", "encoder", "dim", "reduce", "kind", "shards", "reducer_sha256")
CONNECT_TIMEOUT_S = 10.0


class ShardMismatch(IndexMismatch):
    pass


class ShardLost(RagError):
    pass


# ---------------------------------------------------------------- Ray


def import_ray():
    try:
        import ray
    except ImportError:
        raise RagError(f"--engine ray needs Ray, which is not installed; {EXTRA_HINT}") from None
    return ray


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """A TCP connect to host:port of `ray://host:port` or `host:port`, so a dead address fails fast and by name."""
    parsed = urlparse(address if "://" in address else f"ray://{address}")
    if not parsed.hostname or not parsed.port:
        raise RagError(f"--address {address!r} is not auto, host:port or ray://host:port")
    try:
        socket.create_connection((parsed.hostname, parsed.port), timeout=timeout_s).close()
    except OSError as e:
        raise RagError(
            f"cannot reach the Ray cluster at {address} ({e}); start one with `ray start --head`, "
            "or leave --address out for a local Ray"
        ) from None


def connect(address: str | None = None, num_cpus: int | None = None):
    """Ray, connected: to `address` (auto, host:port, ray://host:port) or to a new local instance."""
    ray = import_ray()
    if address and address != "auto":
        check_reachable(address)
    if ray.is_initialized():
        return ray
    try:
        ray.init(
            address=address,
            num_cpus=None if address else num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as e:
        raise RagError(
            f"cannot connect to the Ray cluster at {address or 'a new local instance'} "
            f"({' '.join(str(e).split())[:200]})"
        ) from None
    return ray


class EncodeBatch:
    """A Ray Data actor: loads the encoder once, then turns batches of texts into document vectors."""

    def __init__(self, encoder_name: str, state: dict):
        self.encoder = with_state(get_encoder(encoder_name), state)

    def __call__(self, batch: dict) -> dict:
        vectors = self.encoder.encode([str(t) for t in batch["text"]], kind="document")
        return {"row": batch["row"], "vector": np.asarray(vectors, np.float32)}


def encode_with_ray(
    texts: list[str], encoder_name: str, state: dict | None = None, actors: int | None = None, batch_size: int = 64
) -> np.ndarray:
    """Document vectors [n, width] in the order of `texts`, encoded by a pool of `actors` encoder actors."""
    ray = import_ray()
    import ray.data  # noqa: F811  (the submodule, on the module import_ray checked)

    ray.data.DataContext.get_current().enable_progress_bars = False
    actors = actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
    ds = ray.data.from_items([{"row": i, "text": t} for i, t in enumerate(texts)])
    out = ds.map_batches(
        EncodeBatch,
        fn_constructor_args=(encoder_name, state or {}),
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=1,
        batch_format="numpy",
    )
    rows, vectors = [], []
    for batch in out.iter_batches(batch_format="numpy", batch_size=None):
        rows.append(batch["row"])
        vectors.append(batch["vector"])
    order = np.argsort(np.concatenate(rows))
    return np.concatenate(vectors)[order].astype(np.float32)


def train_template(vectors: np.ndarray, kind: str, seed: int = 0) -> bytes | None:
    """For trained kinds: an empty index trained once on all the vectors (lists sized for all of them), which every
    shard copies before adding its rows. The shards then share one quantizer: each probes the same lists the
    single index would, so the merged top-k is the single index's. None for kinds with nothing to train."""
    if not index_kind(kind).trained:
        return None
    faiss = import_faiss()
    index = build_index(vectors, kind, seed=seed, train_size=train_rows(kind, len(vectors))).index
    index.reset()  # keep the training, drop the vectors
    return faiss.serialize_index(index).tobytes()


def build_part(vectors: np.ndarray, kind: str, template: bytes | None = None) -> tuple[bytes, float, str]:
    """One shard's index (run as a Ray task): its serialized bytes, build seconds and device."""
    start = time.perf_counter()
    if template is None:
        index = build_index(vectors, kind)
    else:
        faiss = import_faiss()
        raw = faiss.deserialize_index(np.frombuffer(template, np.uint8))
        raw.add(np.ascontiguousarray(vectors, np.float32))
        set_search_params(kind, raw)
        index = SearchIndex(kind, raw, vectors.shape[1], "cpu")
    return index.serialize(), time.perf_counter() - start, index.device


# ---------------------------------------------------------------- build


def sharded_path(corpus: Corpus, spec: IndexSpec, shards: int) -> Path:
    return index_dir() / corpus.safe_name / f"{spec.name}-shards{shards}"


def corpus_vectors(corpus: Corpus, encoder_name: str, actors: int | None) -> tuple[np.ndarray, dict, dict]:
    """(full-width vectors, encoder state, how they were had): the cache, else Ray Data (then cached)."""
    cached = cached_embeddings(corpus, encoder_name)
    if cached:
        return cached[0], cached[1], {"encoded_by": "cache"}
    texts = [document_text(p) for p in corpus.passages]
    folder = embedding_cache_dir(corpus, encoder_name)
    folder.mkdir(parents=True, exist_ok=True)
    encoder = get_encoder(encoder_name)
    state = {}
    if hasattr(encoder, "fit"):  # corpus statistics (IDF, whitening) are fitted once, here, and shipped
        fit_state(folder, encoder, texts)
        state = encoder.get_state()
    start = time.perf_counter()
    vectors = encode_with_ray(texts, encoder_name, state, actors)
    seconds = time.perf_counter() - start
    save_npy(folder / "vectors.npy", vectors)
    return (
        vectors,
        state,
        {
            "encoded_by": "ray-data",
            "encode_s": round(seconds, 3),
            "encode_docs_per_s": round(len(texts) / max(seconds, 1e-9), 2),
        },
    )


def build_sharded(
    corpus: Corpus,
    spec: IndexSpec = DEFAULT_INDEX,
    shards: int = 2,
    address: str | None = None,
    actors: int | None = None,
) -> dict:
    """Encode with Ray Data, build `shards` FAISS shards with Ray tasks, store each atomically; returns a summary."""
    spec = spec.validated()
    encoder_name, dim, kind, reduce = spec.encoder, spec.dim, spec.kind, spec.reduce
    if not index_kind(kind).shardable:
        shardable = ", ".join(name for name, entry in INDEX_TABLE.items() if entry.shardable)
        raise RagError(
            f"--index {kind} is not built in shards (its float vectors are not split with the codes); "
            f"build it without --shards, or shard one of: {shardable}"
        )
    if not isinstance(shards, int) or not 1 <= shards <= max(1, len(corpus.passages)):
        raise RagError(f"--shards must be from 1 to the number of passages ({len(corpus.passages)}), got {shards}")
    ray = connect(address)
    vectors, state, how = corpus_vectors(corpus, encoder_name, actors)
    reducer = fit_for_corpus(corpus, encoder_name, vectors, dim, reduce, state=state)  # once, as the single build
    x = reducer.transform(vectors)
    bounds = np.linspace(0, len(x), shards + 1).astype(int)
    template = train_template(x, kind)
    task = ray.remote(num_cpus=1)(build_part)
    built = ray.get([task.remote(x[a:b], kind, template) for a, b in zip(bounds[:-1], bounds[1:])])
    root = sharded_path(corpus, spec, shards)
    out = []
    for i, ((data, build_s, device), a, b) in enumerate(zip(built, bounds[:-1], bounds[1:])):
        manifest = {
            "corpus": corpus.name,
            "corpus_safe_name": corpus.safe_name,
            "corpus_hash": corpus.content_hash,
            "encoder": encoder_name,
            "dim": dim,
            "reduce": reduce,
            "kind": kind,
            "metric": "inner_product",
            "shard": i,
            "shards": shards,
            "offset": int(a),
            "vectors": int(b - a),
            "index_bytes": len(data),
            "build_s": round(build_s, 4),
            "device": device,
            "engine": "ray",
            "rag_version": VERSION,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **how,
        }
        write_version(root / f"shard-{i}", shard_files(data, reducer, state, corpus.passages[a:b]), manifest)
        out.append(read_manifest((root / f"shard-{i}").resolve()))
    return {
        "path": str(root),
        "shards": shards,
        "vectors": len(x),
        "dim": dim,
        "kind": kind,
        **how,
        "shard_vectors": [m["vectors"] for m in out],
        "index_bytes": sum(m["index_bytes"] for m in out),
        "build_s": max(m["build_s"] for m in out),
    }


def shard_files(data: bytes, reducer: Reducer, state: dict, passages: list[Passage]):
    """write_files(folder) for one shard's version: its index, the shared reducer and state, its passages."""

    def write_files(folder: Path) -> None:
        (folder / "index.faiss").write_bytes(data)
        reducer.save(folder)
        if state:
            np.savez(folder / "encoder_state.npz", **state)
        with open(folder / "passages.jsonl", "w", encoding="utf-8") as f:
            for p in passages:
                f.write(json.dumps(dataclasses.asdict(p)) + "\n")

    return write_files


# ---------------------------------------------------------------- search


def check_agreement(manifests: list[tuple[Path, dict]]) -> None:
    """Refuse a set whose shards disagree with shard-0 (d, encoder, reducer, ...) or whose rows do not line up."""
    if not manifests:
        raise IndexMissing("no shards found")
    (p0, m0), offset = manifests[0], 0
    for path, m in manifests:
        m = {**m, "reducer_sha256": m.get("files", {}).get("reducer.npz")}
        ref = {**m0, "reducer_sha256": m0.get("files", {}).get("reducer.npz")}
        for key in AGREE:
            if m.get(key) != ref.get(key):
                raise ShardMismatch(
                    f"shard {path} disagrees with {p0} on {key} "
                    f"({str(m.get(key))[:16]} ≠ {str(ref.get(key))[:16]}); rebuild the shards"
                )
        if m.get("offset") != offset:
            raise ShardMismatch(f"shard {path} starts at row {m.get('offset')}, expected {offset}; rebuild the shards")
        offset += m["vectors"]


@dataclass
class ShardHits:
    """Merged hits for one query batch: scores/rows [nq, k] (global rows, -1 = none) and who answered."""

    scores: np.ndarray
    rows: np.ndarray
    passages: list[list[Passage]]
    answered: list[int]
    missing: list[str] = field(default_factory=list)


def merge_topk(parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The best k of each query over the shards' (scores, global rows); rows of -1 sort last."""
    scores = np.concatenate([np.where(r >= 0, s, -np.inf) for s, r in parts], axis=1)
    rows = np.concatenate([r for _, r in parts], axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)


class Shard:
    """One opened shard: searches and returns global row numbers and its passages (a Ray actor in engine=ray)."""

    def __init__(self, path: str):
        self.loaded = load_index_dir(Path(path))
        self.offset = self.loaded.manifest["offset"]

    def search(self, queries: np.ndarray, k: int):
        scores, rows = self.loaded.index.search(queries, k)
        hits = [[self.loaded.passages[r] for r in row if r >= 0] for row in rows]
        return scores, np.where(rows >= 0, rows + self.offset, -1), hits


class ShardSet:
    """The shards of one sharded index, checked for agreement, opened in this process or in Ray actors."""

    def __init__(
        self,
        root: Path,
        engine: str = "local",
        allow_partial: bool = False,
        address: str | None = None,
        timeout_s: float = 60.0,
    ):
        if engine not in ENGINES:
            raise RagError(f"unknown engine {engine!r}; choose one of: {', '.join(ENGINES)}")
        self.root, self.engine, self.allow_partial, self.timeout_s = Path(root), engine, allow_partial, timeout_s
        folders = sorted(self.root.glob("shard-*"), key=lambda p: int(p.name.split("-")[1]))
        if not folders:
            raise IndexMissing(f"no shards at {self.root}; build them with: rag index build --engine ray --shards S")
        manifests = [(f, read_manifest(f.resolve())) for f in folders]
        check_agreement(manifests)
        self.manifest = manifests[0][1]
        want = self.manifest["shards"]
        self.missing = [f"shard-{i}" for i in range(len(folders), want)]
        if self.missing and not allow_partial:
            raise ShardLost(
                f"{', '.join(self.missing)} of {want} missing under {self.root}; rebuild the shards "
                "or pass --allow-partial"
            )
        self.paths = [str(f) for f in folders]
        if engine == "ray":
            ray = connect(address)
            actor = ray.remote(num_cpus=0)(Shard)  # searching is light; do not hold a core per shard
            self.shards = [actor.remote(p) for p in self.paths]
            ray.get(
                [a.search.remote(np.zeros((1, self.manifest["dim"]), np.float32), 1) for a in self.shards],
                timeout=timeout_s,
            )  # every shard loaded, or an error now
        else:
            self.shards = [Shard(p) for p in self.paths]
        first = load_index_dir(folders[0]) if engine == "ray" else self.shards[0].loaded
        self.reducer, self.encoder_state = first.reducer, first.encoder_state

    def __len__(self) -> int:
        return sum(read_manifest(Path(p).resolve())["vectors"] for p in self.paths)

    def encode(self, queries: list[str]) -> np.ndarray:
        encoder = with_state(get_encoder(self.manifest["encoder"]), self.encoder_state)
        return self.reducer.transform(encoder.encode(queries, kind="query"))

    def search(self, vectors: np.ndarray, k: int) -> ShardHits:
        """Fan out to every shard, merge the top-k; a shard that fails is an error unless allow_partial."""
        vectors = np.ascontiguousarray(vectors, np.float32)
        answers, lost = [], list(self.missing)
        if self.engine == "ray":
            ray = import_ray()
            refs = [a.search.remote(vectors, k) for a in self.shards]
            for i, ref in enumerate(refs):
                try:
                    answers.append((i, ray.get(ref, timeout=self.timeout_s)))
                except (ray.exceptions.RayError, TimeoutError) as e:
                    lost.append(f"shard-{i} ({self.paths[i]}: {type(e).__name__})")
        else:
            answers = [(i, shard.search(vectors, k)) for i, shard in enumerate(self.shards)]
        if lost and not self.allow_partial:
            raise ShardLost(f"{'; '.join(lost)} did not answer; no partial results without --allow-partial")
        if not answers:
            raise ShardLost(f"no shard answered: {'; '.join(lost)}")
        scores, rows = merge_topk([(s, r) for _, (s, r, _) in answers], k)
        by_row = {}
        for _, (_, r, hits) in answers:
            for qi, (row, ps) in enumerate(zip(r, hits)):
                by_row.update({(qi, int(g)): p for g, p in zip(row[row >= 0], ps)})
        passages = [[by_row[(qi, int(g))] for g in row if g >= 0] for qi, row in enumerate(rows)]
        return ShardHits(scores, rows, passages, [i for i, _ in answers], lost)

    def close(self) -> None:
        if self.engine == "ray":
            ray = import_ray()
            for a in self.shards:
                ray.kill(a)
