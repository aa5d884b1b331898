"""`rag lm sweep` end to end on a real wiki-lm slice: compute- and token-matched budgets, baselines, report, bad input."""

import csv
import json

import pytest

from rag.lm.sweep import COLUMNS

TINY = [
    "--layers",
    "1",
    "--heads",
    "2",
    "--vocab",
    "400",
    "--context",
    "32",
    "--batch",
    "8",
    "--threads",
    "1",
    "--precision",
    "fp32",
    "--eval-tokens",
    "1024",
    "--slices",
    "3",
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, wiki_slice):
    return wiki_slice(tmp_path_factory.mktemp("wiki") / "slice", 100_000)


def sweep(cli, corpus, out, *extra):
    return cli(["lm", "sweep", "--corpus", corpus, "--dims", "16,32", *TINY, "--out", out, *extra])


@pytest.mark.slow
def test_compute_matched_sweep_gives_every_d_the_same_flops_and_reports_baselines(cli, corpus, tmp_path):
    out = tmp_path / "sweep"
    flops = 2e9
    res = sweep(cli, corpus, out, "--budget", "compute", "--flops", flops)
    assert res.exit_code == 0, res.output
    with open(out / "results.csv") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames == COLUMNS and [int(r["dim"]) for r in rows] == [16, 32]
    per_step = 8 * 32
    for r in rows:  # the same training FLOPs for every d, to within one step
        assert abs(float(r["train_flops"]) - flops) <= int(r["flops_per_token"]) * per_step / 2 + 1
        assert float(r["test_bpb"]) > 0 and float(r["bigram_test_ppl"]) > 0
    assert int(rows[0]["tokens_seen"]) > int(rows[1]["tokens_seen"])  # smaller d, more tokens
    data = json.loads((out / "results.json").read_text())
    assert data["plan"]["budget"] == "compute" and data["plan"]["flops_per_d"] == flops
    base = data["rows"][0]["baselines"]
    assert base["unigram"]["test_ppl"] > base["bigram"]["test_ppl"] > base["trigram"]["test_ppl"]
    assert data["rows"][0]["baselines"] == data["rows"][1]["baselines"]  # scored on the same targets
    report = (out / "report.md").read_text()
    for png in (
        "val_ppl_vs_d.png",
        "bpb_vs_d.png",
        "compute_frontier.png",
        "loss_curves.png",
        "epoch_time_vs_d.png",
        "peak_mem_vs_d.png",
        "params_vs_d.png",
    ):
        assert (out / png).stat().st_size > 1000 and png in report
    assert "compute-matched, 2GFLOPs per d" in report and "bigram" in report and "MFU bf16 peak" in report
    assert "stops improving" not in report
    assert sweep(cli, corpus, out, "--budget", "compute", "--flops", flops).exit_code == 1  # refused without --resume
    res = sweep(cli, corpus, out, "--budget", "compute", "--flops", flops, "--resume")  # finished d are reused
    assert res.exit_code == 0, res.output


@pytest.mark.slow
def test_token_matched_sweep_gives_every_d_the_same_tokens(cli, corpus, tmp_path):
    out = tmp_path / "tok"
    res = sweep(cli, corpus, out, "--budget", "tokens", "--tokens", 12 * 8 * 32)
    assert res.exit_code == 0, res.output
    rows = json.loads((out / "results.json").read_text())["rows"]
    assert [r["tokens_seen"] for r in rows] == [12 * 8 * 32] * 2
    assert "token-matched, 3.07k tokens per d" in (out / "report.md").read_text()
    (out / "report.md").unlink()
    res = cli(["lm", "report", "--out", out])  # the report is redrawn from the run folders
    assert res.exit_code == 0 and (out / "report.md").exists()


def test_budget_tokens_with_minutes_is_refused_with_a_hint(cli, corpus, tmp_path):
    res = sweep(cli, corpus, tmp_path / "o", "--budget", "tokens", "--minutes", "5")
    assert res.exit_code == 1 and "--budget tokens give --tokens or --epochs" in res.output
    res = sweep(cli, corpus, tmp_path / "o", "--budget", "compute", "--tokens", "1000")
    assert res.exit_code == 1 and "--budget tokens" in res.output
    assert not (tmp_path / "o").exists()


def test_estimate_over_two_hours_asks_for_yes_and_leaves_no_plan(cli, corpus, tmp_path):
    out = tmp_path / "long"
    res = sweep(cli, corpus, out, "--budget", "tokens", "--tokens", 10**10)
    assert res.exit_code == 1 and "estimated time" in res.output and "--yes" in res.output
    assert not (out / "sweep.json").exists()


def test_failed_sweep_leaves_no_stray_plan(cli, corpus, tmp_path):
    out = tmp_path / "nan"
    res = sweep(cli, corpus, out, "--budget", "tokens", "--tokens", 40 * 8 * 32, "--lr", "1e9")
    assert res.exit_code == 1 and "loss became" in res.output
    assert not (out / "sweep.json").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--tokens", "0"], "greater than or equal to 1"),
        (["--epochs", "0"], "--epochs must be greater than 0"),
        (["--minutes", "-1"], "--minutes must be greater than 0"),
        (["--heads", "0"], "greater than or equal to 1"),
        (["--batch", "0"], "greater than or equal to 1"),
        (["--lr", "-1"], "--lr must be greater than 0"),
        (["--threads", "-1"], "greater than or equal to 1"),
        (["--vocab", "10"], "greater than or equal to 257"),
        (["--dims", "128,x"], "--dims"),
        (["--flops", "0"], "greater than or equal to 1"),
    ],
)
def test_bad_numbers_get_one_clear_line(cli, corpus, tmp_path, args, message):
    budget = ["--budget", "tokens"] if args[0] in ("--tokens", "--epochs") else []
    res = cli(["lm", "sweep", "--corpus", corpus, "--out", tmp_path / "o", *budget, *args])
    assert res.exit_code != 0 and message in res.output, res.output
    assert "Traceback" not in res.output and not (tmp_path / "o").exists()


def test_out_that_is_a_file_or_under_a_file_is_refused(cli, corpus, tmp_path):
    afile = tmp_path / "f.txt"
    afile.write_text("x")
    for out, message in ((afile, "is a file"), (afile / "sub", "cannot be created")):
        res = sweep(cli, corpus, out, "--budget", "tokens", "--tokens", 256)
        assert res.exit_code == 1 and message in res.output, res.output
        res = cli(["lm", "train", "--corpus", corpus, "--out", out, "--tokens", 256])
        assert res.exit_code == 1 and message in res.output, res.output


def test_corpus_folder_missing_a_split_is_one_line(cli, tmp_path, wiki_slice):
    folder = wiki_slice(tmp_path / "c", 20_000)
    (folder / "wiki.test.raw").unlink()
    res = cli(["lm", "sweep", "--corpus", folder, "--budget", "tokens", "--tokens", 256, "--out", tmp_path / "o"])
    assert res.exit_code == 1 and "wiki.test.raw" in res.output and len(res.output.strip().splitlines()) <= 2
    assert not (tmp_path / "o" / "sweep.json").exists()


def test_corrupt_sweep_plan_names_the_file(cli, corpus, tmp_path):
    out = tmp_path / "bad"
    out.mkdir()
    (out / "sweep.json").write_text("{not json")
    res = sweep(cli, corpus, out, "--budget", "tokens", "--tokens", 256, "--resume")
    assert res.exit_code == 1 and "sweep.json is corrupt" in res.output and "start the sweep fresh" in res.output
    res = cli(["lm", "report", "--out", out])
    assert res.exit_code == 1 and "sweep.json is corrupt" in res.output


def test_stats_helpers():
    from rag.lm.stats import budget_title, fit_exponent

    assert fit_exponent([128, 256, 512, 1024], [3 * d**1.7 for d in (128, 256, 512, 1024)]) == pytest.approx(1.7)
    assert budget_title({"budget": "compute", "flops_per_d": 7e13}) == "compute-matched, 70TFLOPs per d"
    assert (
        budget_title({"budget": "tokens", "tokens_per_d": {"128": 2_000_000, "256": 2_000_000}})
        == "token-matched, 2M tokens per d"
    )


def test_no_import_cycle_between_report_and_sweep():
    import subprocess
    import sys

    code = "import rag.lm.report, sys; assert 'rag.lm.sweep' not in sys.modules, 'report imports sweep'"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
