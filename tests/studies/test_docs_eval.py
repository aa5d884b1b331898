"""`rag eval answers --docs DIR --questions FILE`: the question file's errors, the scoring, and a real run on a small
documentation folder (real MiniLM, reader and FAISS)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli import app
from rag.config import RagError
from rag.studies.docs_eval import evaluate_docs, has_debris, load_doc_questions, score_answer, summarise_rows

runner = CliRunner()


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


GOOD = {"question": "What does the lynx eat?", "key_facts": ["hares"], "any_of": False, "source": "a.md"}


@pytest.mark.parametrize(
    "rows, message",
    [
        (["{not json"], ":1 is not JSON"),
        ([{**GOOD, "type": "lookup"}, {"question": "x", "type": "lookup"}], ":2 lacks one of"),
        ([{**GOOD, "type": "lookup", "key_facts": "hares"}], "key_facts must be a list of strings"),
        ([{**GOOD, "type": "lookup", "key_facts": []}], "needs key_facts"),
        ([], "holds no questions"),
    ],
)
def test_a_bad_question_file_names_its_line(tmp_path, rows, message):
    with pytest.raises(RagError, match=message):
        load_doc_questions(write_jsonl(tmp_path / "q.jsonl", rows))


def test_a_missing_question_file_or_folder_is_reported_before_any_model_loads(tmp_path):
    q = write_jsonl(tmp_path / "q.jsonl", [{**GOOD, "type": "lookup"}])
    with pytest.raises(RagError, match="no question file"):
        load_doc_questions(tmp_path / "missing.jsonl")
    with pytest.raises(RagError, match="no such folder"):
        evaluate_docs([(tmp_path / "nowhere", q)])
    result = runner.invoke(app, ["eval", "answers", "--docs", str(tmp_path)])
    assert result.exit_code != 0 and "give one of each" in result.output


def test_debris_is_markup_outside_fenced_code():
    assert has_debris("Use :class:`Session` for that.")
    assert has_debris("(ERROR/3) Unknown interpreted text role")
    assert has_debris("!!! note\n    text")
    assert not has_debris("Use Session for that.")
    assert not has_debris("```rst\n:class:`Session`\n```")


def test_scoring_counts_all_or_any_key_facts_and_the_cited_file():
    result = {
        "answer": "It eats hares [1].",
        "citations": [{"id": "a.md#0"}],
        "retrieved": [{"id": "b.md#1"}, {"id": "a.md#0"}],
        "warnings": [],
        "abstained": False,
    }
    item = {"id": "q", "type": "lookup", "question": "?", "key_facts": ["hares", "voles"], "any_of": False}
    assert score_answer({**item, "source": "a.md"}, result, 1.0)["key_fact"] == 0.0
    row = score_answer({**item, "source": "a.md", "any_of": True}, result, 1.0)
    assert row["key_fact"] == 1.0 and row["cited_right"] == 1.0 and row["found_top5"] == 1.0
    absent = score_answer({**item, "type": "absent", "source": None}, {**result, "abstained": True}, 1.0)
    summary = summarise_rows([row, absent])
    assert summary["abstained_absent"] == 1.0 and summary["abstained_answerable"] == 0.0 and summary["absent"] == 1


def test_a_real_run_on_a_small_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "lynx.md").write_text(
        "# The lynx\n\nThe Eurasian lynx hunts mostly hares and roe deer. It lives in the forests of Europe.\n"
    )
    (docs / "install.md").write_text(
        "# Installing\n\nRun `pip install lynxtool` to install the tool. It needs Python 3.11 or later.\n"
    )
    q = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "question": "What does the Eurasian lynx hunt?",
                "key_facts": ["hares"],
                "source": "lynx.md",
                "type": "lookup",
            },
            {
                "question": "How do I install lynxtool?",
                "key_facts": ["pip install lynxtool"],
                "source": "install.md",
                "type": "howto",
            },
            {"question": "What is the lynx's top speed?", "key_facts": [], "source": None, "type": "absent"},
        ],
    )
    result, rows = evaluate_docs([(docs, q)], cli_sample=0)
    summary = result["folders"]["docs"]["summary"]
    assert summary["n"] == 3 and summary["answerable"] == 2 and summary["absent"] == 1
    assert summary["key_fact"] == 1.0 and summary["cited_right"] == 1.0 and summary["debris"] == 0.0
    assert {r["id"] for r in rows} == {"q1", "q2", "q3"} and all(r["latency_ms"] > 0 for r in rows)
    assert result["settings"]["use_abstain"] is True
    out = tmp_path / "out"
    args = ["eval", "answers", "--no-abstain", "--cli-sample", "0", "--docs", docs, "--questions", q, "--out", out]
    ran = runner.invoke(app, [str(a) for a in args])
    assert ran.exit_code == 0, ran.output
    saved = json.loads((out / "results.json").read_text())
    assert saved["settings"]["use_abstain"] is False  # the ablation switch reaches the agent
    lines = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert all(r["answerable"] is None for r in lines) and (out / "report.md").exists()


def test_the_ablation_replays_each_component_off_on_a_small_folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text(
        "# Installing\n\nInstall the tool with pip:\n\n```bash\npip install lynxtool\n```\n\nIt needs Python 3.11.\n"
    )
    (docs / "lynx.md").write_text("# The lynx\n\nThe Eurasian lynx hunts mostly hares and roe deer.\n")
    q = write_jsonl(
        tmp_path / "q.jsonl",
        [
            {
                "question": "How do I install lynxtool?",
                "key_facts": ["pip install lynxtool"],
                "source": "install.md",
                "type": "howto",
            }
        ],
    )
    out = tmp_path / "out"
    ran = runner.invoke(
        app, ["eval", "ablation", "--set", "docs", "--docs", str(docs), "--questions", str(q), "--out", str(out)]
    )
    assert ran.exit_code == 0, ran.output
    table = json.loads((out / "ablation.json").read_text())["sets"]["docs"]
    assert {"all on", "without code", "without span", "without abstain"} <= set(table)
    assert table["all on"]["key_fact"] == 1.0 and table["all on"]["n"] == 1
    assert "| without code |" in (out / "report.md").read_text()
    bad = runner.invoke(app, ["eval", "ablation", "--set", "docs"])
    assert bad.exit_code == 1 and "needs --docs" in bad.output
