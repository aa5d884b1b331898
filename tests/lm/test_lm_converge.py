"""`rag lm sweep --to-convergence` on a real wiki-lm slice: whole-split validation, early stopping, the best checkpoint
scored on the whole test split, an exact resume after a kill, and one-line errors for bad input."""

import hashlib
import json
import shutil
from dataclasses import replace

import pytest
import torch

from rag.config import RagError
from rag.lm.checkpoint import read_curve
from rag.lm.converge import ConvergeSettings, run_convergence, summarize_unfinished
from rag.lm.model import GPT, GPTConfig
from rag.lm.settings import preset
from rag.lm.sweep import default_base
from rag.lm.train import train

TINY = ["--layers", "1", "--heads", "2", "--vocab", "400", "--context", "32", "--batch", "8", "--threads", "1"]
TINY += ["--precision", "fp32", "--compile", "off"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, wiki_slice):
    return wiki_slice(tmp_path_factory.mktemp("wiki") / "slice", 60_000)


def base(corpus, **kw):
    return default_base(
        corpus=str(corpus),
        dim=16,
        layers=1,
        heads=2,
        vocab=400,
        context=32,
        batch=8,
        threads=1,
        precision="fp32",
        compile="off",
        samples=0,
        measure_peak=False,
        **kw,
    )


def converge(cli, corpus, out, *extra):
    return cli(["lm", "sweep", "--to-convergence", "--corpus", corpus, "--dims", "16", *TINY, "--out", out, *extra])


def error_line(res) -> str:
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert res.exit_code == 1 and len(lines) == 1, res.output
    return lines[0]


def weights_sha(folder) -> str:
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


class Killed(Exception):
    pass


def test_a_killed_and_resumed_run_ends_exactly_where_an_uninterrupted_one_does(corpus, tmp_path):
    settings = ConvergeSettings(max_epochs=2, eval_every=0.5, patience=2, dropout=0.1)
    whole = run_convergence(base(corpus), [16], tmp_path / "whole", settings)["summaries"][0]

    def kill(event):  # dies between two checkpoints, as a SIGKILL would: the last checkpoint is what survives
        if event["step"] == 150:
            raise Killed

    with pytest.raises(Killed):
        run_convergence(base(corpus), [16], tmp_path / "cut", settings, progress=kill)
    assert not (tmp_path / "cut" / "d16" / "summary.json").exists()
    partial = summarize_unfinished(tmp_path / "cut" / "d16")  # what a run still training has shown so far
    seen = [p for p in whole["curve"] if p["tokens"] <= partial["curve"][-1]["tokens"]]
    assert not partial["finished"] and partial["curve"] == seen and partial["peak_mem_bytes"] is None
    assert (
        partial["best_val_bpb"] == min(p["val_bpb"] for p in seen) and partial["eval_targets"] == whole["eval_targets"]
    )
    resumed = run_convergence(base(corpus, resume=True), [16], tmp_path / "cut", settings)["summaries"][0]
    for key in ("best_val_bpb", "test_bpb", "test_ppl", "peak_epoch", "tokens_to_best", "flops_to_best", "curve"):
        assert resumed[key] == whole[key], key
    curves = [read_curve(tmp_path / run / "d16") for run in ("whole", "cut")]
    assert [r["loss"] for r in curves[0]] == [r["loss"] for r in curves[1]]  # every step's loss, dropout included
    assert weights_sha(tmp_path / "whole" / "d16" / "best") == weights_sha(tmp_path / "cut" / "d16" / "best")


def test_whole_splits_are_scored_and_the_best_checkpoint_is_reported(cli, corpus, tmp_path):
    out = tmp_path / "conv"
    res = converge(cli, corpus, out, "--max-epochs", "2", "--eval-every", "0.5", "--patience", "2", "--json")
    assert res.exit_code == 0, res.output
    s = json.loads((out / "d16" / "summary.json").read_text())
    result = json.loads((out / "d16" / "result.json").read_text())
    assert s["whole_split"] and s["eval_targets"] == result["eval_tokens"]
    assert result["scored"] == "best-val" and result["eval_tokens"]["test"] > 4096  # not a 2,048-token slice
    assert len(s["curve"]) == 4 and [p["epoch"] for p in s["curve"]] == sorted(p["epoch"] for p in s["curve"])
    best = min(s["curve"], key=lambda p: p["val_bpb"])
    assert s["best_val_bpb"] == best["val_bpb"] and s["test_bpb"] == best["test_bpb"]  # the best point, re-scored
    assert s["tokens_to_best"] == best["tokens"] and s["flops_to_best"] == best["flops"]
    assert s["embedding_params"] == 400 * 16 and s["rest_params"] == s["params"] - 400 * 16
    assert (s["dropout"], s["weight_decay"]) == preset(16) and s["epoch_s"] > 0 and s["peak_mem_bytes"] > 0
    assert json.loads((out / "converge.json").read_text())["mode"] == "to-convergence"
    again = converge(cli, corpus, out, "--max-epochs", "2", "--patience", "2")
    assert "add --resume" in error_line(again)
    done = converge(cli, corpus, out, "--max-epochs", "2", "--patience", "2", "--resume")
    assert done.exit_code == 0 and "best val ppl" in done.output  # a finished width is read back, not retrained


def test_early_stopping_ends_the_run_after_patience_validations_without_gain(corpus, tmp_path):
    # a peak LR far too high for the model makes validation get worse after the first points
    settings = ConvergeSettings(max_epochs=6, eval_every=0.25, patience=2, dropout=0.0)
    s = run_convergence(base(corpus, lr=0.3, warmup=1), [16], tmp_path / "es", settings)["summaries"][0]
    assert s["stopped_early"] and s["epochs_run"] < 6
    vals = [p["val_bpb"] for p in s["curve"]]
    best = vals.index(min(vals))
    assert len(vals) == best + 1 + 2 and s["best_val_bpb"] == vals[best]


def test_bad_input_is_one_line(cli, corpus, tmp_path):
    line = error_line(converge(cli, corpus, tmp_path / "a", "--max-epochs", "0"))
    assert "--max-epochs must be greater than 0" in line
    line = error_line(
        converge(cli, corpus, tmp_path / "b", "--max-epochs", "2", "--eval-every", "0.5", "--patience", "4")
    )
    assert "--patience 4 can never stop the run" in line and "allow 4 validation" in line
    assert "--eval-every" in error_line(converge(cli, corpus, tmp_path / "c", "--eval-every", "0"))
    assert "--dropout" in error_line(converge(cli, corpus, tmp_path / "d", "--dropout", "1.5"))
    assert not any((tmp_path / x).exists() for x in "abcd")  # nothing created by a refused command


def test_resume_from_a_checkpoint_of_another_width_or_vocabulary_is_refused(cli, corpus, tmp_path):
    out = tmp_path / "conv"
    settings = ConvergeSettings(max_epochs=1, eval_every=0.5, patience=1)

    def kill(event):  # dies once the first checkpoint is down
        if (out / "d16" / "ckpt").exists():
            raise Killed

    with pytest.raises(Killed):
        run_convergence(base(corpus), [16], out, settings, progress=kill)
    args = ("--max-epochs", "1", "--patience", "1", "--resume")
    line = error_line(converge(cli, corpus, out, *args[:-1], "--vocab", "300", "--resume"))
    assert "--resume refused" in line and "vocab=400 (asked 300)" in line
    shutil.copytree(out / "d16", out / "d32")  # a d=16 checkpoint where d=32 would resume
    line = error_line(
        cli(["lm", "sweep", "--to-convergence", "--corpus", corpus, "--dims", "32", *TINY, "--out", out, *args])
    )
    assert "--resume refused" in line and "d=16" in line and "not d=32" in line
    cfg = base(corpus, resume=True, out=str(out / "d32"))
    with pytest.raises(RagError, match="another shape"):  # the run folder itself refuses too
        train(replace(cfg, model=replace(cfg.model, dim=32)))


def test_dropout_is_off_in_evaluation_and_free_at_zero():
    torch.manual_seed(0)
    plain = GPT(GPTConfig(vocab=50, dim=16, layers=1, heads=2, context=8))
    torch.manual_seed(0)  # the same weights
    dropped = GPT(GPTConfig(vocab=50, dim=16, layers=1, heads=2, context=8, dropout=0.3))
    x = torch.randint(0, 50, (2, 8))
    plain.train(), dropped.train()
    state = torch.get_rng_state()
    plain(x)
    assert torch.equal(state, torch.get_rng_state())  # p = 0 draws no random numbers: old runs stay bit-exact
    assert not torch.equal(plain(x), dropped(x))
    plain.eval(), dropped.eval()
    assert torch.equal(plain(x), dropped(x))
    with pytest.raises(RagError, match="--dropout"):
        GPTConfig(dropout=1.0).check()


def test_crossing_is_the_first_point_below_the_line_interpolated_in_log_flops():
    from rag.lm.converge_report import crossing

    curve = [{"flops": 1e12, "epoch": 0.5, "test_bpb": 2.2}, {"flops": 4e12, "epoch": 1, "test_bpb": 1.8}]
    curve.append({"flops": 9e12, "epoch": 1.5, "test_bpb": 1.7})
    c = crossing(curve, 2.0)
    assert c["flops_first_point"] == 4e12 and c["epoch_first_point"] == 1
    assert abs(c["flops_interpolated"] - 2e12) < 1e3  # halfway in bits, halfway in log FLOPs
    assert crossing(curve, 1.5) is None


def test_converge_report_finds_the_kn_crossings_and_draws_the_plot(cli, corpus, tmp_path):
    out = tmp_path / "conv"
    assert converge(cli, corpus, out, "--max-epochs", "2", "--patience", "2").exit_code == 0
    kn = cli(["lm", "kn", "--corpus", corpus, "--vocab", "400", "--context", "32", "--orders", "3,4", "--json"])
    assert kn.exit_code == 0, kn.output
    (tmp_path / "kn.json").write_text(kn.output)
    res = cli(["lm", "converge-report", "--results", out, "--kn", tmp_path / "kn.json", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [r["dim"] for r in data["crossings"]] == [16] and set(data["kn_test_bpb"]) == {"kn3", "kn4"}
    assert (out / "test_bpb_vs_flops.png").stat().st_size > 5000 and (out / "crossings.json").exists()
    other = json.loads((tmp_path / "kn.json").read_text())
    other["bytes"]["test"] += 1
    (tmp_path / "kn_other.json").write_text(json.dumps(other))
    line = error_line(cli(["lm", "converge-report", "--results", out, "--kn", tmp_path / "kn_other.json"]))
    assert "not the same targets" in line

    # a width's dropout / weight-decay scan: the run with the lower best validation is its row; the test split
    # chooses nothing (the other run's better test figure is ignored), and a width with a summary too is refused
    summary = json.loads((out / "d16" / "summary.json").read_text())
    (out / "scan").mkdir()
    worse = {**summary, "dropout": 0.3, "best_val_bpb": summary["best_val_bpb"] + 0.1, "test_bpb": 0.5}
    (out / "scan" / "d16-dropout0.3-wd0.1.json").write_text(json.dumps(worse))
    line = error_line(cli(["lm", "converge-report", "--results", out, "--kn", tmp_path / "kn.json"]))
    assert "d=16 has both" in line
    shutil.move(out / "d16" / "summary.json", out / "scan" / "d16-chosen.json")
    res = cli(["lm", "converge-report", "--results", out, "--kn", tmp_path / "kn.json", "--json"])
    assert res.exit_code == 0, res.output
    scanned = json.loads(res.output)
    assert scanned["crossings"][0]["best_test_bpb"] == data["crossings"][0]["best_test_bpb"] != 0.5
    assert [r["dropout"] for r in scanned["scans"]["16"]] == sorted([summary["dropout"], 0.3])
    assert scanned["scan_table"].count("**yes**") == 1
    # a longer epoch cap of a setting sits beside it (its own file) and is the width's row when it validates lower
    longer = {**summary, "max_epochs": 2 * summary["max_epochs"], "best_val_bpb": summary["best_val_bpb"] - 0.05}
    (out / "scan" / f"d16-chosen-cap{2 * summary['max_epochs']:g}.json").write_text(json.dumps(longer))
    res = cli(["lm", "converge-report", "--results", out, "--kn", tmp_path / "kn.json", "--json"])
    assert res.exit_code == 0, res.output
    capped = json.loads(res.output)
    runs = [(r["dropout"], r["max_epochs"]) for r in capped["scans"]["16"]]
    assert runs == [(summary["dropout"], 2.0), (summary["dropout"], 4.0), (0.3, 2.0)]
    assert capped["scan_table"].count("**yes**") == 1 and "of 4 | **yes**" in capped["scan_table"]


def test_the_pruned_grid_summaries_in_docs_redraw_without_their_run_folders(tmp_path):
    from pathlib import Path

    from rag.lm.isoflop_summary import summarize

    src = Path(__file__).resolve().parents[2] / "docs" / "lm" / "isoflop"
    for name in ("isoflop.json", "grid.json", "baselines.json"):
        shutil.copy(src / name, tmp_path / name)
    old = json.loads((src / "isoflop.json").read_text())
    new = json.loads(json.dumps(summarize(tmp_path)))
    assert new["rows"] == old["rows"] and new["lr_check"] == old["lr_check"]
    for budget, fit in old["fits"]["budgets"].items():
        assert new["fits"]["budgets"][budget]["val"]["d_opt"] == pytest.approx(fit["val"]["d_opt"], rel=1e-9)
    assert (tmp_path / "isoflop.png").exists() and (tmp_path / "runs.csv").exists()
