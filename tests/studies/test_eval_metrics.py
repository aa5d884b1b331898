"""Retrieval metrics on a toy run whose values are worked out by hand."""

import math

import numpy as np
import pytest

from rag.config import RagError
from rag.studies.metrics import all_gold_at_k, ann_recall_at_k, clean_qrels, ir_metrics, top_k

QRELS = {
    "q1": {"d1": 1, "d3": 1},
    "q2": {"d5": 1},
    "q3": {"d6": 1},
    "q4": {"d9": 1},  # judged but never retrieved: scores 0 everywhere
}
RUN = {
    # relevant docs at ranks 2 and 4
    "q1": {"d2": 0.9, "d1": 0.8, "d4": 0.7, "d3": 0.6},
    # relevant doc at rank 1
    "q2": {"d5": 0.5, "d1": 0.4},
    # relevant doc at rank 11: outside the top 10, inside the top 100
    "q3": {**{f"x{i}": 1.0 - i / 100 for i in range(10)}, "d6": 0.01},
}


def test_metrics_match_hand_worked_values():
    result = ir_metrics(QRELS, RUN)
    per = result["per_query"]
    # q1: DCG = 1/log2(3) + 1/log2(5); ideal DCG = 1 + 1/log2(3)
    ndcg_q1 = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert per["q1"]["ndcg@10"] == pytest.approx(ndcg_q1, abs=1e-4)  # 0.6509
    assert per["q1"]["recall@10"] == pytest.approx(1.0)
    assert per["q1"]["mrr@10"] == pytest.approx(0.5)
    assert per["q2"]["ndcg@10"] == pytest.approx(1.0)
    assert per["q2"]["mrr@10"] == pytest.approx(1.0)
    # q3: rank 11 counts for recall@100 only; MRR@10 is 0, not 1/11 (recip_rank has no cutoff of its own)
    assert per["q3"]["ndcg@10"] == pytest.approx(0.0)
    assert per["q3"]["recall@10"] == pytest.approx(0.0)
    assert per["q3"]["recall@100"] == pytest.approx(1.0)
    assert per["q3"]["mrr@10"] == pytest.approx(0.0)
    assert per["q4"] == {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    mean = result["mean"]
    assert mean["ndcg@10"] == pytest.approx((ndcg_q1 + 1.0) / 4, abs=1e-4)
    assert mean["recall@10"] == pytest.approx(2 / 4)
    assert mean["recall@100"] == pytest.approx(3 / 4)
    assert mean["mrr@10"] == pytest.approx(1.5 / 4)


def test_top_k_keeps_best_scores():
    assert list(top_k(RUN, 2)["q1"]) == ["d2", "d1"]


def test_all_gold_needs_every_relevant_doc_in_top_k():
    # q1 has both golds in its top 2? no (d3 is 4th); in the top 4: yes. q2: yes. q3, q4: no.
    assert all_gold_at_k(QRELS, RUN, k=2) == pytest.approx(1 / 4)
    assert all_gold_at_k(QRELS, RUN, k=4) == pytest.approx(2 / 4)


def test_ann_recall_is_top_k_overlap():
    exact = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    approx = np.array([[3, 2, 9, 8], [4, 5, 6, -1]])
    # query 1 shares 2 of 4; query 2 shares 3 of 4
    assert ann_recall_at_k(approx, exact, k=4) == pytest.approx((2 / 4 + 3 / 4) / 2)
    assert ann_recall_at_k(exact, exact, k=4) == pytest.approx(1.0)


def test_clean_qrels_counts_unknown_ids():
    qrels = {"q1": {"d1": 1, "ghost-doc": 1}, "ghost-query": {"d1": 1}, "q2": {"ghost-doc-2": 1}}
    clean, check = clean_qrels(qrels, query_ids=["q1", "q2"], doc_ids=["d1", "d2"])
    assert clean == {"q1": {"d1": 1}}
    assert check.unknown_query_ids == ["ghost-query"]
    assert check.unknown_doc_ids == ["ghost-doc", "ghost-doc-2"]
    assert check.dropped_pairs == 3
    assert check.kept_queries == 1


def test_query_set_without_qrels_is_a_clear_error():
    with pytest.raises(RagError, match="has qrels"):
        clean_qrels({"other": {"d1": 1}}, query_ids=["q1"], doc_ids=["d1"])
    with pytest.raises(RagError, match="no qrels"):
        ir_metrics({}, RUN)


def test_malformed_qrels_lines_are_counted_in_one_warning_and_an_all_bad_file_is_an_error(tmp_path):
    from rag.config import RagWarning
    from rag.data.files import load_qrels_file

    path = tmp_path / "qrels.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\nq2\t\t1\nq3\td3\tx\nq4\td4\t2.0\n")
    with pytest.warns(RagWarning, match=r"3 malformed line\(s\), the first is line 3"):
        assert load_qrels_file(path) == {"q1": {"d1": 1}, "q4": {"d4": 2}}
    path.write_text("q1 d1 1\nq2,d2,1\n")
    with pytest.raises(RagError, match="2 malformed line.*query-id<TAB>corpus-id<TAB>score"):
        load_qrels_file(path)
