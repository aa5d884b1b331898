"""`rag eval retrieval`: the quick grid end to end (real MiniLM, FAISS, BM25, SciFact subset), reducers, bad input."""

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from cli import app
from rag.commands.evaluate import INCOMPLETE
from rag.index.kinds import INDEX_KINDS
from rag.index.placement import placement
from rag.reduce import Reducer
from rag.studies.plots import PLOTS
from rag.studies.report import COLUMNS

runner = CliRunner()
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")


def invoke(*args):
    return runner.invoke(app, ["eval", "retrieval", *map(str, args)])


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, data_dir):
    out = tmp_path_factory.mktemp("quick") / "out"
    result = invoke("--quick", "--out", out)
    assert result.exit_code == 0, result.output
    return out


def test_quick_run_writes_every_file(quick_run):
    for name in ["results.csv", "results.json", "report.md", "main_table.md", *PLOTS]:
        assert (quick_run / name).stat().st_size > 0, name
    assert not (quick_run / INCOMPLETE).exists()
    report = (quick_run / "report.md").read_text()
    for name in PLOTS:
        assert f"]({name})" in report
    assert "keeps 95% of the full-width nDCG@10" in report


def test_quick_run_csv_schema_and_metric_ranges(quick_run):
    with open(quick_run / "results.csv") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        rows = list(reader)
    kinds = {r["index"] for r in rows if r["retriever"] == "dense"}
    assert kinds == set(INDEX_KINDS)
    bm25 = [r for r in rows if r["retriever"] == "bm25"]
    assert len(bm25) == 1 and bm25[0]["dim"] == ""  # one reference row, no d
    assert {int(r["dim"]) for r in rows if r["retriever"] == "hybrid"} == {32, 128, 384}
    for r in rows:
        for m in METRICS + ("ann_recall@10",):
            if r[m] != "":
                assert 0.0 <= float(r[m]) <= 1.0, (m, r)
        assert float(r["search_ms_p50"]) > 0 and float(r["batch_qps"]) > 0 and int(r["index_bytes"]) > 0
        assert r["device"] == placement()  # what placement chose on this machine
    flat = [r for r in rows if r["index"] == "flat" and r["retriever"] == "dense"]
    assert all(float(r["ann_recall@10"]) == 1.0 for r in flat)
    # at full width pca and truncate are the identity: the same vectors, the same scores
    full = {r["reduce"]: r for r in flat if r["dim"] == "384"}
    assert full["pca"]["ndcg@10"] == full["truncate"]["ndcg@10"]
    # MiniLM at full width on a small SciFact subset is a real retriever, far above chance
    assert float(full["pca"]["ndcg@10"]) > 0.5
    data = json.loads((quick_run / "results.json").read_text())
    assert data["settings"]["quick"] and data["versions"]["faiss-cpu"] and data["machine"]["cpus"]
    assert all("all_gold@10" in r for r in data["rows"])


def test_non_empty_out_is_refused_then_overwritten_and_interrupted_run_resumes(quick_run, tmp_path):
    refused = invoke("--quick", "--out", quick_run)
    assert refused.exit_code == 1
    assert "--overwrite" in refused.output
    # an interrupted run leaves only the marker: re-running resumes, and the embeddings come from the cache
    out = tmp_path / "interrupted"
    out.mkdir()
    (out / INCOMPLETE).write_text("")
    cheap = ("--quick", "--dims", "32", "--index", "flat", "--retriever", "dense", "--timed-queries", "10")
    resumed = invoke(*cheap, "--out", out)
    assert resumed.exit_code == 0, resumed.output
    assert "resuming" in resumed.output
    data = json.loads((out / "results.json").read_text())
    assert data["encoders"]["minilm"]["corpus_from_cache"] is True
    again = invoke(*cheap, "--out", out, "--overwrite")
    assert again.exit_code == 0, again.output


def test_quick_run_reports_share_kept_and_code_bytes(quick_run):
    with open(quick_run / "results.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["retriever"] == "dense"]
    full = [r for r in rows if r["index"] == "flat" and r["dim"] == "384"]
    assert all(float(r["ndcg@10_share"]) == pytest.approx(1.0) for r in full)
    per_coordinate = {"flat": 4, "sq8": 1, "binary": 1 / 8}
    for r in rows:
        assert 0 < float(r["ndcg@10_share"]) <= 1.2
        if r["index"] in per_coordinate:
            assert int(r["code_bytes"]) == per_coordinate[r["index"]] * int(r["dim"])
        assert int(r["code_bytes"]) <= float(r["bytes_per_vector"])  # the fixed tables come on top


@pytest.mark.slow
def test_learned_reducers_are_compared_with_pca_query_by_query(tmp_path, data_dir):
    out = tmp_path / "out"
    result = invoke(
        "--quick",
        "--dims",
        "32",
        "--reduce",
        "pca,distill,itq",
        "--ann-reduce",
        "pca,itq,distill",
        "--index",
        "flat,binary",
        "--retriever",
        "dense",
        "--timed-queries",
        "10",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    with open(out / "results.csv") as f:
        rows = {(r["reduce"], r["dim"], r["index"]): r for r in csv.DictReader(f)}
    # a rotation keeps every float score: itq on the flat index is PCA, query by query
    itq = rows[("itq", "32", "flat")]
    assert float(itq["vs_pca_ndcg@10"]) == pytest.approx(0, abs=1e-9) == float(itq["vs_pca_ci_low"])
    for kind in ("flat", "binary"):
        r = rows[("distill", "32", kind)]
        assert float(r["vs_pca_ci_low"]) <= float(r["vs_pca_ndcg@10"]) <= float(r["vs_pca_ci_high"])
        assert rows[("pca", "32", kind)]["vs_pca_ndcg@10"] == ""  # PCA is the baseline itself
    report = (out / "report.md").read_text()
    assert "Against PCA at the same d" in report and "distill fit" in report


@pytest.mark.parametrize(
    "option,value,valid",
    [
        ("--dataset", "nosuchset", "scifact, hotpotqa"),
        ("--encoders", "nosuchencoder", "minilm"),
        ("--reduce", "nosuchreducer", "pca, truncate, whiten"),
        ("--index", "nosuchkind", "flat, ivf-flat, ivf-pq, hnsw, sq8, binary"),
        ("--retriever", "nosuchretriever", "dense, bm25, hybrid"),
    ],
)
def test_unknown_names_list_the_valid_ones(tmp_path, option, value, valid):
    result = invoke(option, value, "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert value in result.output and valid in result.output
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_qrels_with_unknown_ids_are_counted_not_fatal(tmp_path, data_dir):
    qrels_in = (data_dir / "scifact" / "qrels" / "test.tsv").read_text().splitlines()
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("\n".join(qrels_in[:41] + ["no-such-query\t4983\t1", "1\tno-such-doc\t1"]) + "\n")
    out = tmp_path / "out"
    result = invoke("--dataset", "scifact", "--qrels", qrels, "--retriever", "bm25", "--out", out)
    assert result.exit_code == 0, result.output
    check = json.loads((out / "results.json").read_text())["data"]["qrels_check"]
    assert check["unknown_query_ids"] == 1 and check["unknown_doc_ids"] == 1 and check["dropped_pairs"] == 2
    assert "unknown query ids" in (out / "report.md").read_text()


def test_query_set_without_qrels_is_a_clear_error(tmp_path, data_dir):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "mine-1", "text": "does aspirin prevent heart attacks?"}\n')
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\n1\t31715818\t1\n")
    result = invoke("--queries", queries, "--qrels", qrels, "--retriever", "bm25", "--out", tmp_path / "out")
    assert result.exit_code == 1 and "has qrels" in result.output
    empty = tmp_path / "empty.tsv"
    empty.write_text("query-id\tcorpus-id\tscore\n")
    result = invoke("--queries", queries, "--qrels", empty, "--retriever", "bm25", "--out", tmp_path / "out2")
    assert result.exit_code == 1 and "no qrels at all" in result.output


def test_hotpotqa_reports_all_gold(tmp_path, data_dir):
    out = tmp_path / "hp"
    result = invoke("--dataset", "hotpotqa", "--quick", "--retriever", "bm25", "--out", out)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    row = data["rows"][0]
    assert 0.0 < row["all_gold@10"] <= row["recall@10"] <= 1.0  # both golds in the top 10 is the stricter test
    assert data["data"]["multi_gold_queries"] == data["data"]["queries"]
    assert "all_gold@10" in (out / "report.md").read_text()


def test_truncation_keeps_the_first_d_coordinates():
    x = np.random.default_rng(0).normal(size=(50, 12)).astype(np.float32)
    y = Reducer.fit(x, 5, "truncate").transform(x)
    expected = x[:, :5] / np.linalg.norm(x[:, :5], axis=1, keepdims=True)
    np.testing.assert_allclose(y, expected, rtol=1e-5)


@pytest.mark.parametrize("reduce", ["pca", "whiten", "abtt"])
def test_reducer_projects_queries_like_documents(quick_run, reduce):
    """A document's text, encoded as a query and projected, finds that document first."""
    from rag.data.corpus import load_corpus
    from rag.data.judgments import subset
    from rag.encoders import get_encoder
    from rag.encoders.base import document_text
    from rag.encoders.cache import embed_corpus
    from rag.index.search_index import build_index
    from rag.studies.grid_spec import QUICK

    corpus = subset(load_corpus("scifact"), QUICK["n_queries"], QUICK["n_extra_docs"])
    enc = get_encoder("minilm")
    docs = embed_corpus(corpus, enc)  # cached by the quick run
    reducer = Reducer.fit(docs, 32, reduce)
    index = build_index(reducer.transform(docs), "flat")
    picks = list(range(0, len(corpus.passages), len(corpus.passages) // 15))[:15]
    queries = enc.encode([document_text(corpus.passages[i]) for i in picks], kind="query")
    _, rows = index.search(reducer.transform(queries), 1)
    assert rows[:, 0].tolist() == picks


def test_report_sentences_come_from_the_numbers():
    from rag.studies.report import divergence_sentences, keep_sentences

    def r(red, dim, ndcg):
        return {"encoder": "e", "reduce": red, "dim": dim, "index": "flat", "retriever": "dense", "ndcg@10": ndcg}

    rows = [
        r("pca", 32, 0.40),
        r("pca", 64, 0.58),
        r("pca", 128, 0.60),
        r("pca", 384, 0.61),
        r("truncate", 32, 0.30),
        r("truncate", 64, 0.52),
        r("truncate", 128, 0.595),
        r("truncate", 384, 0.61),
        r("whiten", 32, 0.50),
        r("whiten", 64, 0.55),
        r("whiten", 384, 0.54),
    ]
    # 95% of the encoder's own full-width 0.61 is 0.5795: PCA keeps it at d=64, truncation only at d=128;
    # whitening never does, although it keeps 95% of its own (lower) full-width figure at d=32
    keep = keep_sentences(rows)[0]
    assert "d=64 (pca)" in keep and "truncate d=128" in keep
    assert "whiten never does (best 0.550 at d=64)" in keep
    diverge = divergence_sentences(rows)[0]
    assert "from d=64 down" in diverge and "0.100 at d=32" in diverge and "PCA leads" in diverge


def test_lm_checkpoint_encoder_runs_through_the_registry(tmp_path, wiki_slice):
    """`--encoders lm:<dir>` with a tiny randomly initialised checkpoint; d wider than it is skipped and said so."""
    import torch

    from rag.lm import checkpoint
    from rag.lm.data import prepare
    from rag.lm.model import GPT, GPTConfig

    tok = prepare(str(wiki_slice(tmp_path / "wiki", 60_000)), 400)
    torch.manual_seed(0)
    run = tmp_path / "run"
    run.mkdir()
    checkpoint.save(run, GPT(GPTConfig(vocab=400, dim=24, layers=1, heads=2, context=16)), None, {"step": 0})
    (run / "tokenizer.json").write_bytes(tok.tokenizer_path.read_bytes())
    out = tmp_path / "out"
    result = invoke(
        "--quick",
        "--encoders",
        f"lm:{run}",
        "--dims",
        "8,32",
        "--index",
        "flat",
        "--retriever",
        "dense",
        "--timed-queries",
        "10",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert {(r["encoder"], r["dim"]) for r in rows if r["reduce"] == "pca"} == {(f"lm:{run}", "8"), (f"lm:{run}", "24")}
    assert "skipped d=32 (wider than the encoder (24))" in (out / "report.md").read_text()


def test_another_query_set_over_the_same_corpus(tmp_path, data_dir):
    qrels_lines = (data_dir / "scifact" / "qrels" / "test.tsv").read_text().splitlines()[1:6]
    wanted = {line.split("\t")[0] for line in qrels_lines}
    rows = [json.loads(x) for x in (data_dir / "scifact" / "queries.jsonl").read_text().splitlines() if x.strip()]
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows if r["_id"] in wanted))
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("\n".join(qrels_lines) + "\n")
    out = tmp_path / "out"
    result = invoke(
        "--queries", queries, "--qrels", qrels, "--retriever", "bm25", "--timed-queries", "10", "--out", out
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert data["data"]["queries"] == len(wanted) and data["data"]["passages"] == 5183


def test_json_output_is_every_row_and_the_files(tmp_path, data_dir):
    out = tmp_path / "out"
    result = invoke(
        "--quick",
        "--dims",
        "32",
        "--reduce",
        "pca",
        "--index",
        "flat",
        "--retriever",
        "dense",
        "--timed-queries",
        "5",
        "--json",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(printed["rows"]) == len(rows) >= 2  # d=32 and the full-width reference
    assert {(r["dim"], r["index"]) for r in printed["rows"]} == {(int(r["dim"]), r["index"]) for r in rows}
    assert printed["files"]["results.csv"] == str(out / "results.csv") and printed["notes"]


def test_the_grid_encodes_queries_as_rag_search_does(quick_run, scifact_small):
    """Every dense and hybrid row records the query backend, and it is the one `rag search` runs (int8 ONNX for
    MiniLM by default); the grid's query vectors are the served retriever's, not the documents' fp32 path."""
    from rag.retrieve import RetrievalSettings, Retriever
    from rag.retrieve.retriever import query_encoder

    with open(quick_run / "results.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["retriever"] != "bm25"]
    served = RetrievalSettings(corpus="scifact", retriever="dense").validated().backend
    assert served == "onnx-int8" and {r["backend"] for r in rows} == {served}
    texts = [q.text for q in scifact_small.queries[:3]]
    grid_side = query_encoder("minilm", None, {}).encode(texts, kind="query")
    retriever = Retriever.open(RetrievalSettings(corpus="scifact", retriever="dense"), corpus=scifact_small)
    assert np.allclose(grid_side, retriever.encoder.encode(texts, kind="query"), atol=1e-6)
