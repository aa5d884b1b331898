"""`rag lm bench`: our training step against a plain nanoGPT-style reference, side by side in one run.

The reference is what the issue measured: separate q/k/v Linear modules, attention written out
(matmul, mask, softmax, matmul), fp32, eager. Ours is rag.lm.model.GPT with the step rag.lm.train
uses (fused qkv, SDPA, bf16 autocast where the CPU has native bf16, optionally torch.compile).
Both see the same shapes and the same thread count; a matmul peak (fp32 and bf16) is measured in
the same run so that % of peak is comparable.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from rag.lm.model import GPT, GPTConfig, flops_per_token


# ------------------------------------------------------------------ the plain reference model

class RefAttention(nn.Module):
    def __init__(self, d: int, heads: int, context: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.proj = nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(context, context)).view(1, 1, context, context))

    def forward(self, x):
        B, T, C = x.shape
        h = self.heads
        q = self.q(x).view(B, T, h, C // h).transpose(1, 2)
        k = self.k(x).view(B, T, h, C // h).transpose(1, 2)
        v = self.v(x).view(B, T, h, C // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))


class RefBlock(nn.Module):
    def __init__(self, d: int, heads: int, context: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = RefAttention(d, heads, context)
        self.fc, self.fc_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))


class RefGPT(nn.Module):
    def __init__(self, vocab: int, d: int, layers: int, heads: int, context: int):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.ModuleList(RefBlock(d, heads, context) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in nanoGPT
        for name, p in self.named_parameters():  # nanoGPT's init (PyTorch defaults would make denormals)
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


# ------------------------------------------------------------------ timing

def cpu_has_bf16() -> bool:
    """True where the CPU runs bf16 matmuls natively (AVX512-BF16 / AMX); else autocast would slow down."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def matmul_peak(dtype=torch.float32, n: int = 2048, seconds: float = 1.5) -> float:
    """Achieved GFLOP/s of an n x n x n matmul (the 'peak' MFU is measured against)."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(2):
        a @ b
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a @ b
        reps += 1
    return 2 * n ** 3 * reps / (time.perf_counter() - t0) / 1e9


def time_steps(step, steps: int, warmup: int) -> float:
    """Seconds per step (median of `steps` timed steps after `warmup`)."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def make_step(model, batch, targets, autocast_dtype=None):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=False)

    def step():
        with torch.autocast("cpu", dtype=autocast_dtype, enabled=autocast_dtype is not None):
            _, loss = model(batch, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


@dataclass
class BenchRow:
    dim: int
    ref_tokens_per_s: float
    ours_tokens_per_s: float
    ratio: float
    ref_gflops: float
    ours_gflops: float
    ours_pct_fp32_peak: float
    ours_pct_bf16_peak: float
    ours_mode: str


def run_bench(dims=(128, 256, 512, 1024), layers=6, heads=8, context=128, batch=16, vocab=10000,
              threads=2, steps=5, warmup=2, compile: bool = False, progress=None) -> dict:
    """Time reference vs ours at each d; returns {'peak_fp32','peak_bf16','rows':[BenchRow...]}."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    bf16 = cpu_has_bf16()
    peak32 = matmul_peak(torch.float32)
    peak16 = matmul_peak(torch.bfloat16) if bf16 else float("nan")
    rows = []
    for d in dims:
        x = torch.randint(0, vocab, (batch, context))
        y = torch.randint(0, vocab, (batch, context))
        cfg = GPTConfig(vocab=vocab, dim=d, layers=layers, heads=heads, context=context, tie=True)
        fpt = flops_per_token(cfg)["train"]
        n = max(1, steps if d < 1024 else steps - 2)
        ref = RefGPT(vocab, d, layers, heads, context)
        t_ref = time_steps(make_step(ref, x, y), n, warmup)
        del ref
        ours = GPT(cfg)
        mode = "bf16-autocast" if bf16 else "fp32"
        if compile:
            ours = torch.compile(ours)
            mode += "+compile"
        t_ours = time_steps(make_step(ours, x, y, torch.bfloat16 if bf16 else None), n, warmup + (2 if compile else 0))
        del ours
        tok = batch * context
        r = BenchRow(d, tok / t_ref, tok / t_ours, t_ref / t_ours, fpt * tok / t_ref / 1e9, fpt * tok / t_ours / 1e9,
                     100 * fpt * tok / t_ours / 1e9 / peak32, 100 * fpt * tok / t_ours / 1e9 / peak16, mode)
        rows.append(r)
        if progress:
            progress(r)
    return {"peak_fp32_gflops": peak32, "peak_bf16_gflops": peak16, "threads": threads, "batch": batch,
            "context": context, "layers": layers, "heads": heads, "vocab": vocab, "rows": rows}
