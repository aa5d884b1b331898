"""`rag eval answers` (rag.studies.answer_eval): every committed built-in question set points at real passages that
state its key fact (but for computed figures), the key-fact check normalises only what it says it does, a real run over a few built-in
questions writes its three files, and a bad question file or part stops before any model loads, naming the line."""

from __future__ import annotations

import json

import pytest

from rag.config import EVALSETS_DIR
from rag.studies.answer_eval import QUESTION_KEYS, contains_fact, seed_items

DATA = EVALSETS_DIR
SETS = sorted(p.name for p in DATA.glob("*questions.jsonl"))
TYPES = {"numeric", "definition", "yesno", "yes/no", "relation", "howto", "how-to", "comparison", "multipart"}
TYPES |= {"multi-part", "why", "other"}


@pytest.fixture(scope="module")
def builtin():
    from rag.data.corpus import load_corpus

    return load_corpus("builtin")


@pytest.mark.parametrize("name", SETS)
def test_each_question_set_points_at_passages_that_state_its_key_fact(name, builtin):
    items = seed_items(DATA / name)
    assert len({i["id"] for i in items}) == len(items), "ids repeat"
    for item in items:
        assert item["type"] in TYPES, item
        texts = [builtin.passage_by_id[g].text for g in item["gold"]]  # KeyError: a passage id the corpus lacks
        if item["type"] != "numeric":  # a numeric key may be a figure computed from a passage ("0.4375")
            assert any(contains_fact(t, item["key_phrase"]) for t in texts), item["id"]


def test_the_key_fact_check_ignores_separators_code_marks_and_citations_only():
    assert contains_fact("It has 524288000 parameters [1].", "524,288,000")
    assert contains_fact("Run `pip install rag` [2]", "pip install rag")
    assert contains_fact("a gap of \u22120.1", "-0.1")
    assert not contains_fact("It has 524,288,001 parameters.", "524,288,000")
    assert not contains_fact("e^3 \u2248 20.09", "20.1")  # strict about precision, as the docs say


@pytest.mark.parametrize(
    "content, message",
    [
        ("not json\n", "is not JSON"),
        ('{"_id": "a", "question": "q"}\n', "lacks passage, key_phrase"),
        ("[1, 2]\n", "lacks _id"),
        ("\n\n", "holds no questions"),
    ],
)
def test_a_bad_question_file_names_its_line(tmp_path, content, message):
    from rag.config import RagError

    path = tmp_path / "q.jsonl"
    path.write_text(content)
    with pytest.raises(RagError, match=message):
        seed_items(path)


def test_the_cli_refuses_a_missing_file_or_part_before_any_model(cli, tmp_path):
    result = cli(["eval", "answers", "--part", "builtin", "--seed", tmp_path / "absent.jsonl", "--out", tmp_path])
    assert result.exit_code != 0 and "no question file" in result.output
    result = cli(["eval", "answers", "--part", "nonsense", "--out", tmp_path])
    assert result.exit_code != 0 and "unknown part" in result.output
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_real_run_over_three_built_in_questions_writes_its_files(cli, tmp_path):
    lines = (DATA / "seed_questions.jsonl").read_text().splitlines()[:3]
    seed = tmp_path / "three.jsonl"
    seed.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    result = cli(["eval", "answers", "--part", "builtin", "--seed", seed, "--threads", "1", "--out", out])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "results.json").read_text())["parts"]["builtin"][0]
    assert summary["n"] == 3 and 0 <= summary["key_fact"] <= 1 and summary["latency_ms_p50"] > 0
    rows = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [json.loads(line)["_id"] for line in lines]
    assert all(r["answer"].strip() and r["key_fact"] in (0.0, 1.0) for r in rows)
    assert "key_fact" in (out / "report.md").read_text()
    assert set(QUESTION_KEYS) <= set(json.loads(lines[0]))
