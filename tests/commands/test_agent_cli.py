"""`rag ask` and `rag eval agent` through the real CLI (typer CliRunner), on real data."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_ask_json_returns_the_contract():
    result = invoke("ask", "How many bytes per parameter does bf16 use?", "--retriever", "bm25", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"question", "answer", "citations", "steps", "timings", "warnings"} <= set(data)
    assert data["citations"] and all({"n", "id", "title", "score"} <= set(c) for c in data["citations"])
    assert data["steps"][0]["node"] == "analyze" and data["steps"][-1]["node"] == "answer"


def test_ask_streams_steps_and_prints_a_cited_answer():
    result = invoke(
        "ask",
        "How many parameters does an embedding table with vocabulary V and dimension d hold?",
        "--retriever",
        "bm25",
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("analyze") < out.index("retrieve") < out.index("grade") < out.index("answer")
    assert "V·d" in out and "[1]" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["ask", "What is d?", "--max-steps", "0"], "--max-steps must be at least 1"),
        (["ask", "What is d?", "--max-steps", "-3"], "--max-steps must be at least 1"),
        (["ask", ""], "empty"),
        (["ask", "What is d?", "--corpus", "nope"], "corpus"),
        (["ask", "What is d?", "--llm", "gpt-9", "--retriever", "bm25"], "unknown llm"),
        (["eval", "agent", "--dataset", "nq", "--out", "x"], "unknown dataset"),
        (["eval", "agent", "--dataset", "hotpotqa", "--limit", "0", "--out", "x"], "--limit"),
    ],
)
def test_bad_input_exits_non_zero_with_one_line(args, message):
    result = invoke(*args)
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output


def test_eval_agent_writes_results(tmp_path, data_dir):
    out = tmp_path / "agent"
    result = invoke("eval", "agent", "--dataset", "hotpotqa", "--limit", "4", "--retriever", "bm25", "--out", out)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    names = [s["name"] for s in data["systems"]]
    assert names == ["single-shot (extractive)", "agent (extractive)"]
    for s in data["systems"]:
        assert {"all_gold@10", "em", "f1", "steps_mean", "latency_ms_p50", "latency_ms_p95"} <= set(s)
        assert 0 <= s["all_gold@10"] <= 1 and s["n_queries"] == 4
    assert data["systems"][1]["steps_mean"] > 1  # the agent took a second hop
    assert (out / "results.csv").read_text().startswith("name,system,backend")
    assert "| agent (extractive) |" in (out / "report.md").read_text()


def test_eval_agent_reads_queries_and_qrels_files(tmp_path, data_dir):
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps(
            {
                "_id": "q1",
                "text": "Were Scott Derrickson and Ed Wood of the same nationality?",
                "metadata": {"answer": "yes"},
            }
        )
        + "\n"
    )
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\tEd Wood\t1\nq1\tScott Derrickson\t1\n")
    out = tmp_path / "agent"
    result = invoke(
        "eval",
        "agent",
        "--dataset",
        "hotpotqa",
        "--queries",
        queries,
        "--qrels",
        qrels,
        "--retriever",
        "bm25",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert data["n_queries"] == 1
    assert data["systems"][1]["all_gold@10"] == 1.0
