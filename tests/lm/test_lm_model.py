"""rag.lm.model: parameter accounting against the real module, tying, positions, causality, `rag lm info`."""

import json

import pytest
import torch
from typer.testing import CliRunner

from rag.config import RagError
from rag.lm.model import GPT, GPTConfig, accounting, flops_per_token, param_counts


def real_count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # tied weights are one Parameter, counted once


def test_hand_count_matches_module_for_tiny_config():
    cfg = GPTConfig(vocab=50, dim=8, layers=2, heads=2, context=4, tie=True, pos="learned")
    # by hand: per block ln1 16 + qkv 8*24+24 + proj 8*8+8 + ln2 16 + fc 8*32+32 + fc_proj 32*8+8 = 872
    hand = 50 * 8 + 4 * 8 + 2 * 872 + 16
    assert hand == 2192
    assert param_counts(cfg)["params"] == hand == real_count(GPT(cfg))
    assert param_counts(cfg)["embedding_params"] == 50 * 8
    assert param_counts(cfg)["position_params"] == 4 * 8


@pytest.mark.parametrize("pos", ["learned", "sinusoidal", "rope"])
@pytest.mark.parametrize("dim", [16, 32])
def test_embedding_params_is_v_times_d_and_tying_saves_exactly_vd(pos, dim):
    V = 97
    tied = GPTConfig(vocab=V, dim=dim, layers=1, heads=2, context=8, tie=True, pos=pos)
    untied = GPTConfig(vocab=V, dim=dim, layers=1, heads=2, context=8, tie=False, pos=pos)
    assert param_counts(tied)["embedding_params"] == V * dim
    assert real_count(GPT(untied)) - real_count(GPT(tied)) == V * dim
    assert param_counts(untied)["params"] - param_counts(tied)["params"] == V * dim
    assert param_counts(tied)["params"] == real_count(GPT(tied))
    assert param_counts(tied)["position_params"] == (8 * dim if pos == "learned" else 0)


def test_default_shape_accounting():
    acc = accounting(GPTConfig(vocab=10000, dim=128))
    assert acc["embedding_params"] == 1_280_000
    assert acc["bytes_fp32"] == 4 * acc["params"] and acc["train_mem_est_bytes"] == 16 * acc["params"]
    assert acc["heuristic_dim_1_5_sqrt_v"] == pytest.approx(150.0)
    # the reference: 4973 tokens/s at d=128 is 80 GFLOP/s -> about 16.1 MFLOP per token
    assert 4973 * flops_per_token(GPTConfig(vocab=10000, dim=128))["train"] / 1e9 == pytest.approx(80, rel=0.02)


@pytest.mark.parametrize("pos", ["learned", "sinusoidal", "rope"])
def test_attention_is_causal(pos):
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab=30, dim=16, layers=2, heads=2, context=12, pos=pos)).eval()
    a = torch.randint(0, 30, (1, 12))
    b = a.clone()
    b[0, 7:] = (b[0, 7:] + 1) % 30  # change only the future
    with torch.no_grad():
        la, lb = model(a), model(b)
    assert torch.allclose(la[0, :7], lb[0, :7], atol=1e-5)
    assert not torch.allclose(la[0, 7:], lb[0, 7:], atol=1e-5)


def test_bad_shapes_refused():
    with pytest.raises(RagError, match="d=100 is not divisible by heads=8"):
        GPTConfig(dim=100, heads=8).check()
    with pytest.raises(RagError, match="unknown --pos"):
        GPTConfig(pos="alibi").check()


def test_info_cli_prints_accounting_and_refuses_bad_d():
    from rag.commands.lm import app

    runner = CliRunner()
    res = runner.invoke(app, ["info", "--dim", "256", "--vocab", "10000", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["embedding_params"] == 2_560_000 and data["flops"]["mlp_fwd"] == 2 * 6 * 8 * 256 * 256
    res = runner.invoke(app, ["info", "--dim", "256"])
    assert res.exit_code == 0 and "1.5·√V" in res.output and "MLP FLOPs/token" in res.output
    res = runner.invoke(app, ["info", "--dim", "100"])
    assert res.exit_code == 1 and "not divisible by heads=8" in res.output


@pytest.mark.parametrize("mm_dtype", [None, torch.bfloat16])
def test_chunked_linear_cross_entropy_matches_plain_cross_entropy(mm_dtype):
    import torch.nn.functional as F

    from rag.lm.model import linear_cross_entropy

    torch.manual_seed(0)
    h = torch.randn(700, 16, requires_grad=True)
    w = (0.3 * torch.randn(300, 16)).requires_grad_()
    y = torch.randint(0, 300, (700,))
    loss = linear_cross_entropy(h, w, y, chunk=128, mm_dtype=mm_dtype)
    gh, gw = torch.autograd.grad(loss, (h, w))
    ref = F.cross_entropy(h @ w.t(), y)
    rh, rw = torch.autograd.grad(ref, (h, w))
    tol = 1e-5 if mm_dtype is None else 2e-2
    assert loss.item() == pytest.approx(ref.item(), rel=tol)
    assert torch.allclose(gh, rh, atol=tol * rh.abs().max()) and torch.allclose(gw, rw, atol=tol * rw.abs().max())


def test_bench_runs_reference_and_ours_side_by_side():
    from rag.lm.bench import run_bench

    res = run_bench(
        dims=(32,), layers=1, heads=2, context=16, batch=2, vocab=200, threads=1, steps=1, warmup=1, peak_seconds=0.2
    )
    row = res["rows"][0]
    assert row.ref_tokens_per_s > 0 and row.ours_tokens_per_s > 0 and row.ratio > 0 and res["peak_fp32_gflops"] > 0
