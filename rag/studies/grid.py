"""Retrieval against embedding dimension: encoder × d × reducer × index kind × retriever on a judged query set.

`run_retrieval_grid(spec)` returns a result dict (rows with the CSV columns, settings, notes, versions,
machine); `rag.studies.report.write_report` turns it into files. Every model is loaded once, and every corpus is
encoded once per encoder at full width (rag.encoders.embed_corpus caches the vectors, so a re-run or an
interrupted run resumes from the cache); reducers derive every lower d from those vectors.
"""

from __future__ import annotations

import platform
import time
from dataclasses import asdict, dataclass, field
from functools import cached_property

from rag.config import VERSION
from rag.encoders import check_backend, get_encoder
from rag.encoders.cache import embed_corpus, embedding_cache_dir
from rag.index.kinds import INDEX_KINDS, INDEX_TABLE, code_bytes
from rag.index.placement import placement
from rag.index.search_index import build_index
from rag.reduce import NEEDS_QUERIES, REDUCER_TABLE, Reducer, ReducerWarning
from rag.retrieve import FUSIONS, RETRIEVER_KINDS, SPARSE_RETRIEVER
from rag.retrieve.retriever import query_encoder
from rag.studies.grid_spec import QUICK, EvalData, GridSpec, Progress, check_spec, load_eval_data
from rag.studies.rows import (
    BATCH_REPEATS,
    RUN_DEPTH,
    WARMUP,
    add_comparisons,
    bm25_reference,
    exact_top,
    hybrid_row,
    p,
    timed,
    timing_order,
    to_run,
    zscore_hybrid_row,
)


@dataclass
class Grid:
    """One run of the grid: the data, the timing order, and the rows and notes it collects."""

    spec: GridSpec
    data: EvalData
    tick: Progress
    order: list[int]
    kinds: list[str]
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    per_query: dict = field(default_factory=dict)  # (encoder, reduce, dim, index, retriever) -> {qid: nDCG@10}
    bm25: dict = field(default_factory=dict)  # the BM25 reference: runs, per-query ms, batch seconds, the index
    done: int = 0
    total: int = 1

    @property
    def queries(self):
        return self.data.queries

    @cached_property
    def q_texts(self) -> list[str]:
        return [q.text for q in self.data.queries]

    @cached_property
    def doc_ids(self) -> list[str]:
        return [p.id for p in self.data.corpus.passages]

    def row(self, **kw) -> dict:
        base = {
            "dataset": self.data.corpus.name,
            "device": "cpu",
            "backend": "",
            "ann_recall@10": "",
            "encode_ms_p50": "",
            "encode_ms_p95": "",
        }
        return base | kw

    def score_run(self, run: dict, key: tuple = ()) -> dict:
        from rag.studies.metrics import all_gold_at_k, ir_metrics

        scored = ir_metrics(self.data.qrels, run)
        self.per_query[key] = {q: m["ndcg@10"] for q, m in scored["per_query"].items()}
        return scored["mean"] | {"all_gold@10": all_gold_at_k(self.data.qrels, run, 10)}


def run_retrieval_grid(spec: GridSpec, progress: Progress | None = None) -> dict:
    """Run the whole grid; return {"settings", "data", "rows", "notes", "skipped", "versions", "machine", ...}."""
    started, cpu_started = time.time(), time.process_time()
    spec = check_spec(spec)
    data = load_eval_data(spec)
    kinds = [k for k in INDEX_KINDS if k in spec.index_kinds]
    grid = Grid(spec, data, progress or (lambda *a: None), timing_order(len(data.queries), spec.timed_queries), kinds)
    grid.total = _count_configs(spec, kinds)
    if any(RETRIEVER_KINDS[r].sparse for r in spec.retrievers):  # the reference row; also the sparse half of hybrid
        fields, runs, ms, batch_s, bm25 = bm25_reference(data.corpus, grid.q_texts, grid.queries, grid.order, grid.tick)
        grid.bm25 = {"runs": runs, "ms": ms, "batch_s": batch_s, "index": bm25}
        if SPARSE_RETRIEVER in spec.retrievers:
            grid.rows.append(grid.row(**fields, **grid.score_run(dict(zip([q.id for q in grid.queries], runs)))))
    encoder_info = {}
    for enc_name in spec.encoders if any(RETRIEVER_KINDS[r].dense for r in spec.retrievers) else ():
        encoder_info[enc_name] = run_encoder(grid, enc_name)
    grid.tick("done", grid.total, grid.total)
    grid.notes += add_comparisons(grid.rows, grid.per_query, seed=spec.seed)
    for r in grid.rows:
        r["dataset"] = spec.dataset if not spec.quick else data.corpus.name
    multi = sum(1 for rels in data.qrels.values() if sum(1 for v in rels.values() if v > 0) > 1)
    return {
        "settings": asdict(spec),
        "data": {
            "corpus": data.corpus.name,
            "passages": len(grid.doc_ids),
            "queries": len(grid.queries),
            "multi_gold_queries": multi,
            "qrels_check": data.qrels_check,
        },
        "rows": grid.rows,
        "notes": grid.notes + grid_notes(grid),
        "skipped": grid.skipped,
        "encoders": encoder_info,
        "versions": _versions(),
        "machine": _machine(placement()),
        "elapsed_s": time.time() - started,
        "process_cpu_s": time.process_time() - cpu_started,
    }


def run_encoder(grid: Grid, enc_name: str) -> dict:
    """Encode the corpus (cached) and the queries once, then measure every reducer × d × kind; return its info."""
    spec, corpus, tick = grid.spec, grid.data.corpus, grid.tick
    tick(f"loading {enc_name}", 0, 1)
    t0 = time.perf_counter()
    enc = get_encoder(enc_name)
    load_s = time.perf_counter() - t0
    tick(f"loading {enc_name}", 1, 1)
    cached = (embedding_cache_dir(corpus, enc.name) / "vectors.npy").exists()
    t0 = time.perf_counter()
    doc_full = embed_corpus(corpus, enc, progress=lambda n, t: tick(f"encoding {corpus.name} with {enc_name}", n, t))
    encode_corpus_s = time.perf_counter() - t0
    state = enc.get_state() if hasattr(enc, "get_state") else {}
    q_enc = query_encoder(enc_name, spec.backend, state)  # the query path of `rag search`, not the documents' one
    backend = check_backend(enc_name, spec.backend, queries=True)
    q_full = q_enc.encode(grid.q_texts, kind="query")
    for i in grid.order[:WARMUP]:
        q_enc.encode([grid.q_texts[i]], kind="query")
    enc_ms = timed(lambda i: q_enc.encode([grid.q_texts[i]], kind="query"), grid.order)
    width = doc_full.shape[1]
    dims = sorted({d for d in spec.dims if d <= width} | {width})
    wide = [d for d in spec.dims if d > width]
    if wide:
        grid.skipped.append({"encoder": enc_name, "dims": wide, "why": f"wider than the encoder ({width})"})
    if width not in spec.dims:
        grid.notes.append(f"{enc_name}: added its full width d={width} as the reference for the 95% rule.")
    pseudo = None
    if set(spec.reducers) & set(NEEDS_QUERIES):
        from rag.reduce.pseudo import pseudo_query_vectors

        tick(f"pseudo-queries for {enc_name}", 0, 1)
        pseudo = pseudo_query_vectors(corpus, enc, seed=spec.seed)
    fitted: dict[tuple[str, int], Reducer] = {}
    for reduce in spec.reducers:
        for dim in dims:
            t0 = time.perf_counter()
            reducer = fit_reducer(fitted, doc_full, dim, reduce, pseudo, spec, grid.notes, enc_name)
            docs = reducer.transform(doc_full)
            reduce_s = time.perf_counter() - t0
            qv = reducer.transform(q_full)
            tr_ms = timed(
                lambda i, reducer=reducer: reducer.transform(q_full[i : i + 1]), grid.order, single_thread=True
            )
            reduced = {
                "encoder": enc_name,
                "backend": backend,
                "reduce": reduce,
                "dim": dim,
                "docs": docs,
                "qv": qv,
                "encode_ms": enc_ms + tr_ms,
                "reduce_s": reduce_s,
                "exact_top10": exact_top(qv, docs, 10),
            }
            for kind in kinds_for(reduce, grid.kinds, spec):
                measure_kind(grid, reduced, kind)
    return {
        "width": width,
        "load_s": round(load_s, 2),
        "corpus_from_cache": cached,
        "encode_corpus_s": round(encode_corpus_s, 2),
        "encode_ms_p50": p(enc_ms, 50),
    }


def measure_kind(grid: Grid, reduced: dict, kind: str) -> None:
    """Build one index kind over reduced vectors, time it, score it; append its dense and hybrid rows."""
    from rag.studies.metrics import ann_recall_at_k

    spec, order, qv, docs = grid.spec, grid.order, reduced["qv"], reduced["docs"]
    enc_name, reduce, dim = reduced["encoder"], reduced["reduce"], reduced["dim"]
    grid.tick(f"{enc_name} {reduce} d={dim} {kind}", grid.done, grid.total)
    t0 = time.perf_counter()
    index = build_index(docs, kind, seed=spec.seed)
    build_s = reduced["reduce_s"] + time.perf_counter() - t0
    for i in order[:WARMUP]:
        index.search(qv[i : i + 1], 10)
    search_ms = timed(lambda i: index.search(qv[i : i + 1], 10), order, single_thread=True)
    batch_s = float("inf")
    for _ in range(BATCH_REPEATS):  # the best of a few: the first call also warms thread pools
        t0 = time.perf_counter()
        scores, hits = index.search(qv, RUN_DEPTH)
        batch_s = min(batch_s, time.perf_counter() - t0)
    n_docs, n_queries = len(grid.doc_ids), len(grid.queries)
    dense = to_run(grid.queries, grid.doc_ids, scores, hits)
    nbytes = index.nbytes
    encode_ms = reduced["encode_ms"]
    common = dict(
        encoder=enc_name,
        backend=reduced["backend"],
        reduce=reduce,
        dim=dim,
        index=kind,
        device=index.device,
        encode_ms_p50=p(encode_ms, 50),
        encode_ms_p95=p(encode_ms, 95),
        index_bytes=nbytes,
        bytes_per_vector=nbytes / n_docs,
        build_s=build_s,
        code_bytes=code_bytes(kind, dim, n_docs),
    )
    key = (enc_name, reduce, dim, kind)
    if "dense" in spec.retrievers:
        ann = ann_recall_at_k(hits, reduced["exact_top10"], 10)
        grid.rows.append(
            grid.row(
                **common,
                retriever="dense",
                **grid.score_run(dense, key + ("dense",)),
                **{"ann_recall@10": ann},
                search_ms_p50=p(search_ms, 50),
                search_ms_p95=p(search_ms, 95),
                batch_qps=n_queries / batch_s,
            )
        )
    hybrid_score = lambda run: grid.score_run(run, key + ("hybrid",))  # noqa: E731
    b = grid.bm25
    if "hybrid" in spec.retrievers and INDEX_TABLE[kind].exact and spec.fusion == "zscore":
        grid.rows.append(
            grid.row(
                **zscore_hybrid_row(
                    common,
                    qv,
                    docs,
                    b["index"],
                    grid.q_texts,
                    grid.queries,
                    grid.doc_ids,
                    order,
                    spec.hybrid_weight,
                    hybrid_score,
                )
            )
        )
    elif "hybrid" in spec.retrievers and INDEX_TABLE[kind].exact:
        grid.rows.append(
            grid.row(
                **hybrid_row(
                    common,
                    dense,
                    b["runs"],
                    grid.queries,
                    order,
                    search_ms,
                    b["ms"],
                    batch_s,
                    b["batch_s"],
                    spec.hybrid_weight,
                    hybrid_score,
                )
            )
        )
    grid.done += 1


def grid_notes(grid: Grid) -> list[str]:
    """What every reader of the report needs to know about how the figures were taken."""
    spec, notes, kinds = grid.spec, [], grid.kinds
    if set(spec.ann_reducers) != set(spec.reducers) and spec.ann_reducers and len(kinds) > 1:
        notes.append(
            f"Approximate index kinds ({', '.join(k for k in kinds if k != 'flat')}) run with reducer(s) "
            f"{', '.join(spec.ann_reducers)} only; flat runs with every reducer."
        )
    notes.append(
        "encode_ms = the encoder on one query plus the reducer's projection; search_ms = one index search "
        f"for the top 10 (FAISS/BLAS pinned to one thread); both over {len(grid.order)} single queries after "
        f"{WARMUP} warm-up queries. batch_qps = all {len(grid.queries)} queries in one call for the top "
        f"{RUN_DEPTH} (best of {BATCH_REPEATS}). build_s = reducer fit + index build from cached full-width "
        "vectors."
    )
    notes.append(f"Hybrid = {spec.fusion} fusion, dense weight {spec.hybrid_weight}: {FUSIONS[spec.fusion]}.")
    c = grid.data.qrels_check
    if c.get("dropped_pairs"):
        notes.append(
            f"qrels: dropped {c['dropped_pairs']} pairs naming {c['unknown_query_ids']} unknown query ids "
            f"and {c['unknown_doc_ids']} unknown document ids (e.g. {', '.join(c['examples'])})."
        )
    for s in grid.skipped:
        notes.append(f"{s['encoder']}: skipped d={', '.join(map(str, s['dims']))} ({s['why']}).")
    return notes


def fit_reducer(
    fitted: dict, doc_full, dim: int, reduce: str, pseudo, spec: GridSpec, notes: list, enc_name: str
) -> Reducer:
    """Fit one reducer (distill-itq reuses the distill fit from `fitted`); a distill fallback becomes a note."""
    import warnings

    seed = spec.seed
    budget = spec.distill_budget_s or (QUICK["distill_budget_s"] if spec.quick else None)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ReducerWarning)
        base = REDUCER_TABLE[reduce].rotates
        if base and (base, dim) in fitted:  # the (slow) base fit once, the rotation on top
            reducer = fitted[(base, dim)].with_itq(doc_full, reduce, seed)
        else:
            reducer = Reducer.fit(doc_full, dim, reduce, queries=pseudo, seed=seed, budget_s=budget)
    notes += [f"{enc_name} d={dim} {reduce}: {w.message}" for w in caught if issubclass(w.category, ReducerWarning)]
    fitted[(reduce, dim)] = reducer
    if reducer.fit_info:
        notes.append(f"{enc_name} d={dim} {reduce} fit: {reducer.fit_info}")
    return reducer


def kinds_for(reduce: str, kinds: list[str], spec: GridSpec) -> list[str]:
    """Flat runs with every reducer; approximate kinds with spec.ann_reducers; an ITQ rotation changes only what
    sign bits see, so the -itq reducers run flat and binary only."""
    out = [k for k in kinds if INDEX_TABLE[k].exact or not spec.ann_reducers or reduce in spec.ann_reducers]
    if REDUCER_TABLE[reduce].rotates:
        return [k for k in out if INDEX_TABLE[k].exact or INDEX_TABLE[k].binary]
    return out


def _count_configs(spec: GridSpec, kinds: list[str]) -> int:
    per_dim = sum(len(kinds_for(r, kinds, spec)) for r in spec.reducers)
    return max(1, per_dim * len(spec.encoders) * (len(spec.dims) + 1))


def _versions() -> dict:
    import importlib.metadata as md

    out = {"rag": VERSION, "python": platform.python_version()}
    for pkg in ("numpy", "faiss-cpu", "torch", "sentence-transformers", "transformers", "bm25s", "pytrec-eval-terrier"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


def _machine(device: str) -> dict:
    import os

    info = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "device": device,
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    return info
