"""rag.lm.train: a tiny GPT learns on real wiki-lm text, resumes after a real kill, DDP ranks agree, bad input."""

import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from rag.config import RagError
from rag.lm.checkpoint import read_curve, read_state
from rag.lm.model import GPTConfig
from rag.lm.train import TrainConfig, evaluate, train

REPO = Path(__file__).resolve().parents[2]
TINY = dict(dim=32, layers=2, heads=2, vocab=500, context=32)
STEPS, BATCH = 200, 8


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, wiki_slice):
    return wiki_slice(tmp_path_factory.mktemp("wiki") / "slice", 150_000)


def read_state_or_none(run):
    try:
        return read_state(run)
    except (RagError, OSError):  # caught mid-write
        return None


def tiny_config(corpus, out, **kw) -> TrainConfig:
    base = dict(
        corpus=str(corpus),
        out=str(out),
        model=GPTConfig(**TINY),
        batch=BATCH,
        tokens=STEPS * BATCH * 32,
        threads=1,
        precision="fp32",
        compile="off",
        eval_tokens=2048,
        slice_eval_tokens=512,
        samples=1,
        lr=3e-3,
    )
    base.update(kw)
    return TrainConfig(**base)


def cli_args(corpus, out, *extra):
    return [
        "train",
        "--corpus",
        str(corpus),
        "--dim",
        "32",
        "--layers",
        "2",
        "--heads",
        "2",
        "--vocab",
        "500",
        "--context",
        "32",
        "--batch",
        str(BATCH),
        "--tokens",
        str(STEPS * BATCH * 32),
        "--threads",
        "1",
        "--precision",
        "fp32",
        "--compile",
        "off",
        "--eval-tokens",
        "2048",
        "--lr",
        "3e-3",
        "--out",
        str(out),
        *extra,
    ]


@pytest.fixture(scope="module")
def reference_run(corpus, tmp_path_factory):
    """One uninterrupted 200-step run (also the baseline for the resume test)."""
    out = tmp_path_factory.mktemp("ref") / "run"
    result = train(tiny_config(corpus, out))
    return out, result


def test_validation_loss_drops_within_200_steps(corpus, reference_run):
    import torch

    from rag.lm.data import prepare
    from rag.lm.model import GPT
    from rag.lm.runtime import Runtime

    out, result = reference_run
    torch.manual_seed(1337)
    untrained = evaluate(
        GPT(GPTConfig(**TINY)), prepare(str(corpus), 500).ids["valid"], Runtime("cpu", "fp32", False), BATCH, 2048
    )
    assert untrained == pytest.approx(math.log(500), abs=0.3)  # init keeps the first loss near ln V
    assert result["val_loss"] < untrained - 1.0, (untrained, result["val_loss"])
    assert result["tokens_seen"] == STEPS * BATCH * 32 and result["embedding_params"] == 500 * 32
    for f in ("config.json", "tokenizer.json", "result.json", "ckpt/model.safetensors", "ckpt/optimizer.pt"):
        assert (out / f).exists(), f


def test_resume_after_kill_continues_the_curve(corpus, reference_run, tmp_path):
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag.commands.lm", *cli_args(corpus, out, "--json")],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 600  # generous: the machine may be shared
    while time.time() < deadline and proc.poll() is None:  # kill once a checkpoint exists and more steps ran
        if read_state_or_none(out) and len(read_curve(out)) >= 60:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"run ended before the kill: {proc.stderr.read().decode()[-500:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = len(read_curve(out))
    saved = read_state(out)["step"]  # the kill may fall between the two renames of a checkpoint swap
    assert 0 < saved < STEPS and killed_at >= saved
    with pytest.raises(RagError, match="already holds a run; add --resume"):
        train(tiny_config(corpus, out))
    result = train(tiny_config(corpus, out, resume=True))
    curve, ref_curve = read_curve(out), read_curve(reference_run[0])
    assert [r["step"] for r in curve] == list(range(1, STEPS + 1))  # no gap, no repeat
    for a, b in zip(curve, ref_curve):  # the same curve as the uninterrupted run
        assert a["loss"] == pytest.approx(b["loss"], abs=2e-3), (a, b)
    assert result["val_loss"] == pytest.approx(reference_run[1]["val_loss"], abs=2e-3)


def test_resume_with_another_shape_is_refused(corpus, reference_run):
    cfg = tiny_config(corpus, reference_run[0], resume=True)
    with pytest.raises(RagError, match=r"--resume refused: .*dim=32 \(asked 64\)"):
        train(replace(cfg, model=replace(cfg.model, dim=64)))
    with pytest.raises(RagError, match="no checkpoint"):
        train(tiny_config(corpus, reference_run[0].parent / "none", resume=True))


def test_nan_loss_stops_naming_d_and_step(corpus, tmp_path):
    with pytest.raises(RagError, match=r"loss became (nan|inf|-inf) at step \d+ for d=32; lower --lr"):
        train(tiny_config(corpus, tmp_path / "nan", lr=1e9, warmup=1, clip=1e30, tokens=30 * BATCH * 32))


def test_out_of_memory_names_d_and_suggests_smaller_batch(corpus, tmp_path):
    cfg = tiny_config(corpus, tmp_path / "oom", model=GPTConfig(vocab=500, dim=2**18, layers=1, heads=1, context=32))
    with pytest.raises(RagError, match=r"out of memory at d=262144 .*reduce --batch"):
        train(cfg)


def test_cli_refuses_bad_d_before_training(corpus, tmp_path):
    from typer.testing import CliRunner

    from rag.commands.lm import app

    res = CliRunner().invoke(
        app, ["train", "--corpus", str(corpus), "--dim", "36", "--heads", "8", "--out", str(tmp_path / "x")]
    )
    assert res.exit_code == 1 and "d=36 is not divisible by heads=8" in res.output
    assert not (tmp_path / "x").exists()


def test_ddp_two_processes_hold_identical_weights(corpus, tmp_path):
    out = tmp_path / "ddp"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    args = cli_args(corpus, out, "--json")
    args[args.index("--tokens") + 1] = str(12 * BATCH * 32 * 2)  # 12 steps on each of 2 ranks
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            "-m",
            "rag.commands.lm",
            *args,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,  # two ranks' start-up and gloo rendezvous: minutes on a loaded 2-core box
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    r0, r1 = (out / "ddp" / "rank0.sha256").read_text(), (out / "ddp" / "rank1.sha256").read_text()
    assert r0 == r1
    result = json.loads((out / "result.json").read_text())
    assert result["steps"] == 12 and result["tokens_seen"] == 12 * BATCH * 32 * 2 and "ddp2" in result["device"]


def test_result_carries_baselines_bits_per_byte_and_both_mfus(reference_run):
    result = reference_run[1]
    b = result["baselines"]
    assert set(b) == {"unigram", "bigram", "trigram"} and b["bigram"]["test_ppl"] == result["bigram_test_ppl"]
    bpb = result["test_loss"] * result["eval_tokens"]["test"] / math.log(2) / result["eval_bytes"]["test"]
    assert result["test_bpb"] == pytest.approx(bpb, rel=1e-3)
    assert 0 < result["mfu_fp32"] and result["peak_fp32_flops"] > 0 and result["init"] == "gpt2"
    assert "test_ppl_per_word" not in result


@pytest.mark.parametrize(
    "victim, content",
    [("ckpt/state.json", "{trunc"), ("ckpt/model.safetensors", "garbage"), ("ckpt/optimizer.pt", "garbage")],
)
def test_corrupt_checkpoint_is_one_line_naming_the_file(cli, corpus, reference_run, tmp_path, victim, content):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(reference_run[0], run)
    (run / victim).write_text(content)
    res = cli(["lm", *cli_args(corpus, run, "--resume")])
    assert res.exit_code == 1, res.output
    assert victim.split("/")[-1] in res.output and "start fresh" in res.output
    assert "Traceback" not in res.output


def test_scaled_init_draws_weights_with_std_one_over_sqrt_d():
    import torch

    from rag.lm.model import GPT

    torch.manual_seed(0)
    for init, want in (("gpt2", 0.02), ("scaled", 64**-0.5)):
        model = GPT(GPTConfig(vocab=500, dim=64, layers=2, heads=2, context=32, init=init))
        assert model.wte.weight.std().item() == pytest.approx(want, rel=0.05)
        assert model.blocks[0].fc.weight.std().item() == pytest.approx(want, rel=0.05)
    with pytest.raises(RagError, match="unknown --init"):
        GPTConfig(init="xavier").check()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--epochs", "0"], "--epochs must be greater than 0"),
        (["--minutes", "0"], "--minutes must be greater than 0"),
        (["--lr", "-1"], "--lr must be greater than 0"),
        (["--batch", "0"], "greater than or equal to 1"),
        (["--vocab", "10"], "greater than or equal to 257"),
    ],
)
def test_train_refuses_bad_numbers(cli, corpus, tmp_path, args, message):
    res = cli(["lm", "train", "--corpus", corpus, "--out", tmp_path / "o", *args])
    assert res.exit_code != 0 and message in res.output, res.output
    assert "Traceback" not in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_lr_scan_writes_verdicts_per_d(cli, corpus, tmp_path):
    out = tmp_path / "scan"
    res = cli(
        [
            "lm",
            "lr-scan",
            "--corpus",
            corpus,
            "--dims",
            "16,32",
            "--factors",
            "0.5,1",
            "--tokens",
            6 * 8 * 32,
            "--layers",
            "1",
            "--heads",
            "2",
            "--vocab",
            "500",
            "--context",
            "32",
            "--batch",
            "8",
            "--eval-tokens",
            "1024",
            "--threads",
            "1",
            "--out",
            out,
            "--json",
        ]
    )
    assert res.exit_code == 0, res.output
    scan = json.loads(res.output)
    assert len(scan["results"]) == 4 and len(scan["verdicts"]) == 2
    assert all("within 10%" in v or "NOT within 10%" in v for v in scan["verdicts"])
    assert (out / "lr_scan.png").stat().st_size > 1000 and (out / "lr_scan.md").exists()
