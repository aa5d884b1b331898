"""`rag advise`: which encoder, d, reducer and index kind to use for this corpus under a memory budget.

Every candidate configuration that can fit the budget is built and measured on the user's own corpus:
- with qrels, by nDCG@10 on the judged queries (and, beside it, the label-free proxy, so the two can be compared);
- without, by the proxy: how much of the full-width flat top 10 the configuration keeps on held-out
  pseudo-queries (rag.reduce.pseudo; drawn from documents that did not train the learned reducers).
The recommendation is the best-measured configuration within the budget (or, with min_quality, the smallest
one that keeps that share of the full-width quality). A budget nothing meets is said so, with the nearest ones.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from rag.config import RagError, valid_choice
from rag.encoders import check_encoder_name, get_encoder
from rag.encoders.cache import cached_embeddings, embed_corpus, with_state
from rag.index.kinds import INDEX_KINDS, INDEX_TABLE, code_bytes
from rag.index.search_index import build_index
from rag.index.spec import DEFAULT_INDEX
from rag.reduce import NEEDS_QUERIES, REDUCER_TABLE, REDUCERS, Reducer
from rag.studies.rows import exact_top, to_run

DEFAULT_DIMS = (32, 64, 128, 256, 384)
DEFAULT_KINDS = tuple(name for name, kind in INDEX_TABLE.items() if kind.exhaustive)
# the default reducer, and the learned one (trained on pseudo-queries; binary codes take its ITQ-rotated form)
DEFAULT_REDUCERS = (DEFAULT_INDEX.reduce, *(n for n, k in REDUCER_TABLE.items() if k.needs_queries and not k.rotates))
HELD_OUT = 200  # pseudo-queries for the proxy
NEAREST = 3


@dataclass
class AdviseSpec:
    corpus: str
    encoders: tuple[str, ...] = (DEFAULT_INDEX.encoder,)
    dims: tuple[int, ...] = DEFAULT_DIMS
    reducers: tuple[str, ...] = DEFAULT_REDUCERS
    kinds: tuple[str, ...] = DEFAULT_KINDS
    queries_file: str | None = None
    qrels_file: str | None = None
    max_bytes_per_vector: float | None = None
    max_index_mb: float | None = None
    min_quality: float | None = None  # share of the full-width quality to keep (0..1)
    seed: int = 0


@dataclass
class Advice:
    measure: str  # "ndcg@10" or "proxy"
    rows: list[dict]
    recommended: dict | None
    met_budget: bool
    command: str | None
    notes: list[str] = field(default_factory=list)
    spearman: float | None = None  # proxy against nDCG@10 over the measured configurations (with qrels)
    qrels_check: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def check_spec(spec: AdviseSpec) -> AdviseSpec:
    if spec.max_bytes_per_vector is None and spec.max_index_mb is None:
        raise RagError("give a budget: --max-bytes-per-vector B or --max-index-mb M")
    for value, name in ((spec.max_bytes_per_vector, "--max-bytes-per-vector"), (spec.max_index_mb, "--max-index-mb")):
        if value is not None and value <= 0:
            raise RagError(f"{name} must be positive, got {value}")
    if spec.min_quality is not None and not 0 < spec.min_quality <= 1:
        raise RagError(f"--min-quality is a share of the full-width quality, 0..1; got {spec.min_quality}")
    if (spec.queries_file is None) != (spec.qrels_file is None) and spec.qrels_file is None:
        raise RagError("--queries needs --qrels with judgments for those queries (BEIR qrels TSV)")
    for e in spec.encoders:
        check_encoder_name(e)
    for r in spec.reducers:
        valid_choice(r, REDUCERS, "reducer")
    for k in spec.kinds:
        valid_choice(k, INDEX_KINDS, "index kind")
    if not spec.dims or any(d < 1 for d in spec.dims):
        raise RagError(f"--dims must be positive integers, got {list(spec.dims)}")
    return spec


def reducers_for(kind: str, reducers: tuple[str, ...]) -> list[str]:
    """Binary codes take the ITQ-rotated form of each reducer (a rotation changes nothing else)."""
    if not INDEX_TABLE[kind].binary:
        return [r for r in reducers if not REDUCER_TABLE[r].rotates]
    return list(dict.fromkeys(REDUCER_TABLE[r].rotated or r for r in reducers))


def candidates(spec: AdviseSpec, width: int, n: int) -> list[dict]:
    """Every (d, reducer, kind) for one encoder, with its code bytes and whether the budget can hold it."""
    out = []
    for dim in sorted({d for d in spec.dims if d <= width} | {width}):
        for kind in spec.kinds:
            for reduce in reducers_for(kind, spec.reducers):
                cb = code_bytes(kind, dim, n)
                fits = (spec.max_bytes_per_vector is None or cb <= spec.max_bytes_per_vector) and (
                    spec.max_index_mb is None or cb * n <= spec.max_index_mb * 1e6
                )
                out.append({"dim": dim, "reduce": reduce, "index": kind, "code_bytes": cb, "fits": fits})
    return out


def load_judged(corpus, spec: AdviseSpec):
    """(queries, qrels, check) from --queries/--qrels or the corpus's own judged queries; ([], {}, {}) if none."""
    from rag.data.files import load_qrels_file
    from rag.data.judgments import load_queries_file
    from rag.studies.metrics import clean_qrels

    queries, qrels = corpus.queries, corpus.qrels
    if spec.qrels_file:
        qrels = load_qrels_file(spec.qrels_file)
        queries = load_queries_file(spec.queries_file) if spec.queries_file else corpus.queries
    if not qrels:
        return [], {}, {}
    clean, check = clean_qrels(qrels, [q.id for q in queries], [p.id for p in corpus.passages])
    summary = {
        "dropped_pairs": check.dropped_pairs,
        "unknown_query_ids": len(check.unknown_query_ids),
        "unknown_doc_ids": len(check.unknown_doc_ids),
        "kept_queries": check.kept_queries,
        "examples": check.unknown_doc_ids[:3],
    }
    return [q for q in queries if q.id in clean], clean, summary


def advise(spec: AdviseSpec, progress=None) -> Advice:
    """Measure the candidate configurations on the corpus and recommend one (see the module docstring)."""
    from rag.data.corpus import load_corpus
    from rag.reduce.pseudo import pseudo_query_vectors
    from rag.studies.metrics import ir_metrics

    spec = check_spec(spec)
    tick = progress or (lambda *a: None)
    corpus = load_corpus(spec.corpus)
    if len(corpus.passages) < 20:
        raise RagError(f"corpus '{spec.corpus}' has {len(corpus.passages)} passages; advice needs at least 20")
    queries, qrels, check = load_judged(corpus, spec)
    measure = "ndcg@10" if qrels else "proxy"
    doc_ids, rows, notes = [p.id for p in corpus.passages], [], []
    if check.get("dropped_pairs"):
        notes.append(
            f"qrels: dropped {check['dropped_pairs']} pairs naming {check['unknown_query_ids']} unknown "
            f"query ids and {check['unknown_doc_ids']} unknown document ids "
            f"(e.g. {', '.join(check['examples'])})"
        )
    for enc_name in spec.encoders:
        cached = cached_embeddings(corpus, enc_name)
        enc = None if cached else get_encoder(enc_name)
        docs, state = (
            cached
            if cached
            else (
                embed_corpus(corpus, enc, progress=lambda n, t: tick("encoding", n, t)),
                enc.get_state() if hasattr(enc, "get_state") else {},
            )
        )
        enc_or_name = with_state(enc, state) if enc else enc_name
        held = pseudo_query_vectors(corpus, enc_or_name, n=HELD_OUT, seed=spec.seed + 1, state=state, held_out=True)
        ref = exact_top(held, docs, 10)
        real, full_quality = None, 1.0  # the proxy of full-width flat search is 1 by definition
        if qrels:
            encoder = with_state(get_encoder(enc_name), state)
            real = encoder.encode([q.text for q in queries], kind="query")
            top = exact_top(real / np.linalg.norm(real, axis=1, keepdims=True), docs, 100)
            run = to_run(queries, doc_ids, np.take_along_axis(real @ docs.T, top, 1), top)
            full_quality = ir_metrics(qrels, run)["mean"]["ndcg@10"]
            notes.append(f"{enc_name} at full width, flat: nDCG@10 {full_quality:.3f} (the reference for 'share')")
        every = candidates(spec, docs.shape[1], len(docs))
        todo = [c for c in every if c["fits"]]  # what cannot fit is not built
        if not todo:
            todo = sorted(every, key=lambda c: (c["code_bytes"], -c["dim"]))[:NEAREST]
        pseudo = None
        if any(c["reduce"] in NEEDS_QUERIES for c in todo):
            pseudo = pseudo_query_vectors(corpus, enc_or_name, seed=spec.seed, state=state)
        fitted: dict[tuple[str, int], Reducer] = {}
        for i, c in enumerate(todo):
            tick(f"{enc_name} {c['index']} {c['reduce']} d={c['dim']}", i, len(todo))
            reducer = fit_once(fitted, docs, c["dim"], c["reduce"], pseudo, spec.seed)
            t0 = time.perf_counter()
            index = build_index(reducer.transform(docs), c["index"], seed=spec.seed)
            row = {
                "encoder": enc_name,
                **c,
                "index_bytes": index.nbytes,
                "build_s": time.perf_counter() - t0,
                "fell_back": reducer.fit_info.get("fell_back", False),
            }
            _, hits = index.search(reducer.transform(held), 10)
            row["proxy"] = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(hits.tolist(), ref.tolist())]))
            if qrels:
                scores, hits = index.search(reducer.transform(real), 100)
                row["ndcg@10"] = ir_metrics(qrels, to_run(queries, doc_ids, scores, hits))["mean"]["ndcg@10"]
            row["index_mb"] = row["index_bytes"] / 1e6
            row["share"] = row[measure] / full_quality if full_quality > 0 else None
            rows.append(row)
        tick("done", len(todo), len(todo))
        notes += [
            f"{enc_name} d={d} {r}: distill did not beat PCA on its held-out pseudo-queries; it is PCA here"
            for (r, d), red in fitted.items()
            if red.fit_info.get("fell_back")
        ]
    return recommend(spec, measure, rows, notes, check)


def fit_once(fitted: dict, docs, dim: int, reduce: str, pseudo, seed: int) -> Reducer:
    """One fit per (reducer, d); distill-itq rotates the distill fit, itq the PCA one."""
    import warnings

    if (reduce, dim) not in fitted:
        base = REDUCER_TABLE[reduce].rotates
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a fallback is reported from fit_info
            if base and (base, dim) in fitted and fitted[(base, dim)].matrix is not None:
                fitted[(reduce, dim)] = fitted[(base, dim)].with_itq(docs, reduce, seed)
            else:
                fitted[(reduce, dim)] = Reducer.fit(docs, dim, reduce, queries=pseudo, seed=seed)
    return fitted[(reduce, dim)]


def recommend(spec: AdviseSpec, measure: str, rows: list[dict], notes: list[str], check: dict) -> Advice:
    """Pick within the budget (measured index bytes checked too) and fill each row's share of full width."""
    for r in rows:
        if spec.max_index_mb is not None and r["index_mb"] > spec.max_index_mb:
            r["fits"] = False
    rows.sort(key=lambda r: (-r[measure], r["code_bytes"]))
    fitting = [r for r in rows if r["fits"]]
    chosen = fitting[0] if fitting else None
    if fitting and spec.min_quality is not None:
        good = [r for r in fitting if r["share"] is not None and r["share"] >= spec.min_quality]
        if good:
            chosen = min(good, key=lambda r: (r["code_bytes"], -r[measure]))
        else:
            notes.append(
                f"no configuration within the budget keeps {spec.min_quality:.0%} of the full-width "
                f"quality; the best within it keeps {chosen['share']:.0%}"
                if chosen["share"]
                else ""
            )
    if not fitting:
        notes.append("no configuration meets the budget; the nearest (smallest) ones are shown")
    if measure == "proxy":
        notes.append(
            "quality = the share of the full-width flat top 10 kept on held-out pseudo-queries: a proxy "
            "for retrieval quality, measured without labels"
        )
    spearman = None
    if measure == "ndcg@10" and len(rows) >= 3:
        from scipy.stats import spearmanr

        spearman = float(spearmanr([r["proxy"] for r in rows], [r["ndcg@10"] for r in rows]).statistic)
    command = None
    if chosen:
        command = (
            f"rag index build --corpus {spec.corpus} --encoder {chosen['encoder']} --dim {chosen['dim']} "
            f"--index {chosen['index']} --reduce {chosen['reduce']}"
        )
    return Advice(measure, rows, chosen, bool(fitting), command, [n for n in notes if n], spearman, check)
