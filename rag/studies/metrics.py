"""Retrieval metrics: IR measures through pytrec_eval, plus ANN overlap and HotpotQA all-gold.

Runs and qrels are BEIR-style plain dicts: ``run{qid: {doc_id: score}}`` and
``qrels{qid: {doc_id: relevance}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rag.config import RagError

IR_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
_TREC_MEASURES = {"ndcg_cut.10", "recall.10", "recall.100"}


def top_k(run: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
    """Keep the k best-scored documents of each query (ties broken by doc id, like trec_eval)."""
    out = {}
    for qid, docs in run.items():
        ranked = sorted(docs.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:k]
        out[qid] = dict(ranked)
    return out


def ir_metrics(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict:
    """nDCG@10, Recall@10, Recall@100 and MRR@10 averaged over every query in ``qrels``.

    A query that is in the qrels but missing from the run scores 0. MRR@10 is pytrec_eval's
    ``recip_rank`` on the run cut to its top 10 (``recip_rank`` itself has no cutoff).
    Returns ``{"mean": {metric: value}, "per_query": {qid: {metric: value}}}``.
    """
    import pytrec_eval

    if not qrels:
        raise RagError("no qrels to evaluate against; pass a qrels file that covers the query set")
    run = {qid: {d: float(s) for d, s in docs.items()} for qid, docs in run.items() if qid in qrels}
    full = pytrec_eval.RelevanceEvaluator(qrels, _TREC_MEASURES).evaluate(run)
    cut = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top_k(run, 10))
    per_query = {}
    for qid in qrels:
        f, c = full.get(qid, {}), cut.get(qid, {})
        per_query[qid] = {
            "ndcg@10": f.get("ndcg_cut_10", 0.0),
            "recall@10": f.get("recall_10", 0.0),
            "recall@100": f.get("recall_100", 0.0),
            "mrr@10": c.get("recip_rank", 0.0),
        }
    mean = {m: float(np.mean([pq[m] for pq in per_query.values()])) for m in IR_METRICS}
    return {"mean": mean, "per_query": per_query}


def all_gold_at_k(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], k: int = 10) -> float:
    """Share of qrels queries whose relevant documents are all in the run's top k (HotpotQA: both gold paragraphs)."""
    hits = []
    topk = top_k(run, k)
    for qid, rels in qrels.items():
        gold = {d for d, r in rels.items() if r > 0}
        if gold:
            hits.append(gold <= set(topk.get(qid, {})))
    return float(np.mean(hits)) if hits else 0.0


def ann_recall_at_k(approx_rows: np.ndarray, exact_rows: np.ndarray, k: int = 10) -> float:
    """Mean overlap between the approximate and the exact top-k row ids (``-1`` = no result)."""
    approx_rows, exact_rows = np.asarray(approx_rows)[:, :k], np.asarray(exact_rows)[:, :k]
    overlaps = []
    for a, e in zip(approx_rows, exact_rows):
        exact = set(e[e >= 0].tolist())
        if exact:
            overlaps.append(len(exact & set(a[a >= 0].tolist())) / len(exact))
    return float(np.mean(overlaps)) if overlaps else 0.0


@dataclass
class QrelsCheck:
    """What was dropped from the qrels because it names ids the corpus or query set lacks."""

    unknown_query_ids: list[str] = field(default_factory=list)
    unknown_doc_ids: list[str] = field(default_factory=list)
    dropped_pairs: int = 0
    kept_queries: int = 0


def clean_qrels(qrels: dict[str, dict[str, int]], query_ids, doc_ids) -> tuple[dict[str, dict[str, int]], QrelsCheck]:
    """Drop qrels entries whose query or document id is unknown; count what was dropped.

    Raises RagError when no judged query is left (a query set with no qrels at all).
    """
    query_ids, doc_ids = set(query_ids), set(doc_ids)
    check = QrelsCheck()
    unknown_docs: set[str] = set()
    clean: dict[str, dict[str, int]] = {}
    for qid, docs in qrels.items():
        if qid not in query_ids:
            check.unknown_query_ids.append(qid)
            check.dropped_pairs += len(docs)
            continue
        kept = {}
        for d, r in docs.items():
            if d in doc_ids:
                kept[d] = int(r)
            else:
                unknown_docs.add(d)
                check.dropped_pairs += 1
        if kept:
            clean[qid] = kept
    check.unknown_doc_ids = sorted(unknown_docs)
    check.kept_queries = len(clean)
    if not clean:
        raise RagError(
            f"none of the {len(query_ids)} queries has qrels over this corpus "
            f"({len(check.unknown_query_ids)} qrels query ids and {len(unknown_docs)} doc ids are unknown); "
            "pass --qrels with judgments for these queries"
        )
    return clean, check
