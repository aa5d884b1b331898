"""`rag advise`: measured recommendations under a byte budget, on a real SciFact subset (with and without labels)
and on a user folder; a budget nothing meets; qrels naming unknown documents."""

import json

import pytest
from conftest import write_beir


@pytest.fixture(scope="module")
def beir_folder(scifact_small, tmp_path_factory):
    """The SciFact subset written as a BEIR folder, with one qrels line naming a document that does not exist."""
    first = next(iter(scifact_small.qrels))
    return write_beir(tmp_path_factory.mktemp("beir"), scifact_small, extra_qrels=f"{first}\tno-such-doc\t1\n")


def advise(cli, *args):
    result = cli(["advise", *map(str, args), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


CHEAP = ("--dims", "32,128", "--reduce", "pca", "--index", "flat,sq8,binary")


@pytest.mark.slow
def test_with_qrels_it_measures_ndcg_recommends_within_budget_and_counts_unknown_documents(cli, beir_folder):
    out = advise(cli, "--corpus", beir_folder, "--max-bytes-per-vector", 128, *CHEAP)
    assert out["measure"] == "ndcg@10" and out["met_budget"]
    rows, chosen = out["rows"], out["recommended"]
    assert all(r["code_bytes"] <= 128 for r in rows)  # nothing over budget was built
    assert chosen == max(rows, key=lambda r: (r["ndcg@10"], -r["code_bytes"]))
    assert out["command"] == (
        f"rag index build --corpus {beir_folder} --encoder minilm --dim {chosen['dim']} "
        f"--index {chosen['index']} --reduce {chosen['reduce']}"
    )
    assert out["qrels_check"]["unknown_doc_ids"] == 1 and any("unknown document ids" in n for n in out["notes"])
    assert -1 <= out["spearman"] <= 1 and all(0 <= r["proxy"] <= 1 for r in rows)
    # --min-quality: the smallest configuration that keeps that share of the full-width nDCG@10
    low = advise(cli, "--corpus", beir_folder, "--max-bytes-per-vector", 128, "--min-quality", 0.5, *CHEAP)
    kept = [r for r in low["rows"] if r["share"] >= 0.5]
    assert low["recommended"]["code_bytes"] == min(r["code_bytes"] for r in kept)


def test_a_budget_nothing_meets_says_so_and_shows_the_nearest(cli, beir_folder):
    result = cli(["advise", "--corpus", str(beir_folder), "--max-bytes-per-vector", "1", *CHEAP])
    assert result.exit_code == 0, result.output
    assert "no configuration meets the budget" in result.output and "recommended" not in result.output
    out = advise(cli, "--corpus", beir_folder, "--max-bytes-per-vector", 1, *CHEAP)
    assert not out["met_budget"] and out["recommended"] is None and out["command"] is None
    assert [r["code_bytes"] for r in out["rows"]] and all(not r["fits"] for r in out["rows"])
    assert min(r["code_bytes"] for r in out["rows"]) == 4  # binary at d=32: the nearest there is


def test_a_folder_without_labels_uses_the_stated_proxy(cli):
    result = cli(
        [
            "advise",
            "--corpus",
            "builtin",
            "--max-index-mb",
            "1",
            "--dims",
            "32",
            "--reduce",
            "pca",
            "--index",
            "flat,binary",
        ]
    )
    assert result.exit_code == 0, result.output
    assert "proxy" in result.output and "rag index build --corpus builtin" in result.output
    out = advise(
        cli, "--corpus", "builtin", "--max-index-mb", 1, "--dims", 32, "--reduce", "pca", "--index", "flat,binary"
    )
    assert out["measure"] == "proxy" and out["spearman"] is None
    full = [r for r in out["rows"] if r["index"] == "flat" and r["dim"] == max(x["dim"] for x in out["rows"])]
    assert full and full[0]["proxy"] == pytest.approx(1.0)  # full-width flat search is its own reference


@pytest.mark.parametrize(
    "args,message",
    [
        (("--corpus", "builtin"), "give a budget"),
        (("--corpus", "builtin", "--max-index-mb", "-1"), "must be positive"),
        (("--corpus", "builtin", "--max-index-mb", "1", "--min-quality", "2"), "0..1"),
        (("--corpus", "builtin", "--max-index-mb", "1", "--index", "nosuchkind"), "opq-pq"),
        (("--corpus", "builtin", "--max-index-mb", "1", "--reduce", "nosuch"), "distill"),
    ],
)
def test_bad_options_are_refused_with_the_valid_values(cli, args, message):
    result = cli(["advise", *args])
    assert result.exit_code == 1 and message in result.output
