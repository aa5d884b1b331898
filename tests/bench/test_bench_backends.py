"""The backend parts of `rag bench search`: quality per backend and corpus-encode speed, on a real SciFact subset."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_quality_and_encode_speed_per_backend(scifact_small):
    from rag.bench.search import bench_corpus_encode, bench_quality

    q = bench_quality(scifact_small)
    by = {(r["documents"], r["queries"]): r for r in q["rows"]}
    assert set(by) == {("fp32", "torch"), ("fp32", "onnx"), ("fp32", "onnx-int8"), ("int8", "onnx-int8")}
    assert q["queries"] == 20 and by[("fp32", "torch")]["ndcg_loss"] == 0.0
    assert 0.4 < by[("fp32", "torch")]["ndcg@10"] <= 1.0  # 20 judged queries among 140 documents: MiniLM finds most
    assert abs(by[("fp32", "onnx")]["ndcg_loss"]) < 1e-3 and by[("fp32", "onnx")]["query_cosine_to_torch"] > 0.9999
    assert 0.97 < by[("int8", "onnx-int8")]["document_cosine_to_torch"] < 0.99999

    e = bench_corpus_encode(scifact_small, n_docs=24, chunks=2)
    assert e["documents"] == 24 and set(e["docs_per_s"]) == {
        "plain sentence-transformers",
        "torch",
        "onnx",
        "onnx-int8",
    }
    assert (
        all(rate > 0 for rate in e["docs_per_s"].values()) and e["ratio_to_plain"]["plain sentence-transformers"] == 1.0
    )


def test_bench_search_refuses_zero_counts(cli):
    result = cli(["bench", "search", "--queries", "0", "--no-cold"])
    assert result.exit_code == 1 and "must be at least 1" in result.output
