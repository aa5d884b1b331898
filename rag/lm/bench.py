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
from rag.lm.runtime import auto_precision, cpu_has_bf16
from rag.lm.runtime import matmul_peak as _matmul_peak

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


def time_alternating(steps: dict, rounds: int, warmup: int) -> dict[str, float]:
    """Median seconds per step of each callable, timed in alternation (ref, ours, ref, ours, ...) so that
    load from other processes hits both alike."""
    for step in steps.values():
        for _ in range(warmup):
            step()
    times = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    return {name: sorted(t)[len(t) // 2] for name, t in times.items()}


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


def run_bench(
    dims=(128, 256, 512, 1024),
    layers=6,
    heads=8,
    context=128,
    batch=16,
    vocab=10000,
    threads=2,
    steps=5,
    warmup=2,
    compile: bool = False,
    progress=None,
    peak_seconds: float = 1.5,
) -> dict:
    """Time reference vs ours at each d; returns {'peak_fp32','peak_bf16','rows':[BenchRow...]}."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    peak32 = _matmul_peak("cpu", torch.float32, seconds=peak_seconds) / 1e9
    peak16 = _matmul_peak("cpu", torch.bfloat16, seconds=peak_seconds) / 1e9 if cpu_has_bf16() else float("nan")
    rows = []
    for d in dims:
        x = torch.randint(0, vocab, (batch, context))
        y = torch.randint(0, vocab, (batch, context))
        cfg = GPTConfig(vocab=vocab, dim=d, layers=layers, heads=heads, context=context, tie=True)
        fpt = flops_per_token(cfg)["train"]
        mode = auto_precision("cpu", d)
        use_bf16 = mode == "bf16"
        ours = GPT(cfg)
        if mode == "bf16-head":
            ours.head_dtype = torch.bfloat16
        if compile:
            ours = torch.compile(ours)
            mode += "+compile"
        timed = time_alternating(
            {
                "ref": make_step(RefGPT(vocab, d, layers, heads, context), x, y),
                "ours": make_step(ours, x, y, torch.bfloat16 if use_bf16 else None),
            },
            rounds=max(1, steps if d < 1024 else steps - 2),
            warmup=warmup + (2 if compile else 0),
        )
        t_ref, t_ours = timed["ref"], timed["ours"]
        del ours
        tok = batch * context
        r = BenchRow(
            d,
            tok / t_ref,
            tok / t_ours,
            t_ref / t_ours,
            fpt * tok / t_ref / 1e9,
            fpt * tok / t_ours / 1e9,
            100 * fpt * tok / t_ours / 1e9 / peak32,
            100 * fpt * tok / t_ours / 1e9 / peak16,
            mode,
        )
        rows.append(r)
        if progress:
            progress(r)
    return {
        "peak_fp32_gflops": peak32,
        "peak_bf16_gflops": peak16,
        "threads": threads,
        "batch": batch,
        "context": context,
        "layers": layers,
        "heads": heads,
        "vocab": vocab,
        "rows": rows,
    }
