"""A small decoder-only GPT in one readable file (nanoGPT style), plus its accounting.

Shape: token embedding (V x d) -> [+ learned/sinusoidal positions] -> L pre-LayerNorm blocks
(causal scaled-dot-product attention, GELU MLP 4d) -> final LayerNorm -> head (tied to the
embedding, or its own V x d matrix).

Init (`init`): "gpt2" (default) draws every weight matrix, the token embedding and the learned
position table from N(0, 0.02) as GPT-2 does; "scaled" draws them from N(0, 1/sqrt(d)) as the
source material describes (std 0.088 at d=128, 0.031 at d=1024). In both, the two residual
projections of each block are further divided by sqrt(2L); biases 0, LayerNorm weight 1. With a tied
head, "scaled" makes the first logits larger at small d; "gpt2" keeps the initial loss near ln V at
every d, so all points of the sweep start alike.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from rag.lm.settings import GPTConfig


def sinusoid_table(context: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos position table of 'Attention is all you need' [context, dim]."""
    pos = torch.arange(context, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(context, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: dim // 2])
    return table


def rope_tables(context: int, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin [context, head_dim/2] for rotary position embedding."""
    inv = 1.0 / (10000 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    angles = torch.arange(context, dtype=torch.float32)[:, None] * inv[None, :]
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (x[..., :h/2], x[..., h/2:]) of x [B, H, T, h] by the position angles."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def drop(x: torch.Tensor, p: float) -> torch.Tensor:
    """Dropout that is the identity (and draws no random numbers) at p = 0, so dropout-free runs stay bit-exact."""
    return F.dropout(x, p, training=True) if p > 0 else x


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.heads, self.dim = cfg.heads, cfg.dim
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)  # one fused projection for q, k and v
        self.proj = nn.Linear(cfg.dim, cfg.dim)
        self.rope = cfg.pos == "rope"
        self.dropout = cfg.dropout
        if self.rope:
            cos, sin = rope_tables(cfg.context, cfg.dim // cfg.heads)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        if self.rope:
            q, k = apply_rope(q, self.cos[:T], self.sin[:T]), apply_rope(k, self.cos[:T], self.sin[:T])
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)  # flash / memory-efficient kernel
        return drop(self.proj(y.transpose(1, 2).reshape(B, T, C)), p)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.dim)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.dim)
        self.fc = nn.Linear(cfg.dim, 4 * cfg.dim)
        self.fc_proj = nn.Linear(4 * cfg.dim, cfg.dim)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        mlp = self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return x + drop(mlp, self.dropout if self.training else 0.0)


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg.check()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))  # first: an impossible size fails fast
        self.wte = nn.Embedding(cfg.vocab, cfg.dim)
        if cfg.pos == "learned":
            self.wpe = nn.Parameter(torch.zeros(cfg.context, cfg.dim))
        elif cfg.pos == "sinusoidal":
            self.register_buffer("wpe", sinusoid_table(cfg.context, cfg.dim), persistent=False)
        else:
            self.wpe = None
        self.ln_f = nn.LayerNorm(cfg.dim)
        self.head = None if cfg.tie else nn.Linear(cfg.dim, cfg.vocab, bias=False)
        self.head_dtype: torch.dtype | None = None  # set to bf16 to run only the head + loss matmuls in bf16
        self.fused_loss = True  # chunked linear + cross-entropy in training (off under torch.compile)
        self._init_weights()

    def _init_weights(self) -> None:
        std = self.cfg.std()
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif ".ln" in name or name.startswith("ln_f"):
                nn.init.ones_(p)
            elif name.endswith("proj.weight"):  # residual projections: scaled down with depth
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * self.cfg.layers))
            else:
                nn.init.normal_(p, 0.0, std)

    def output_weight(self) -> torch.Tensor:
        return self.wte.weight if self.head is None else self.head.weight

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """Final-LayerNorm hidden states [B, T, d] for token ids idx [B, T]."""
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe[: idx.shape[1]]
        x = drop(x, self.cfg.dropout if self.training else 0.0)
        for block in self.blocks:
            x = block(x)
        return self.ln_f(x)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Logits [B, T, V]; with targets, (None, mean cross-entropy in fp32) without materialising logits.

        Training never needs the [B*T, V] logits: linear_cross_entropy computes the loss and its
        gradients chunk by chunk (same maths as F.cross_entropy(h @ W.T, y), less memory traffic).
        """
        h = self.hidden(idx)
        if targets is None:
            return F.linear(h, self.output_weight())
        if not self.fused_loss:  # plain path (torch.compile fuses this one itself)
            logits = F.linear(h, self.output_weight())
            return logits, F.cross_entropy(logits.float().flatten(0, 1), targets.reshape(-1))
        return None, linear_cross_entropy(
            h.flatten(0, 1), self.output_weight(), targets.reshape(-1), mm_dtype=self.head_dtype
        )

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        new_tokens: int,
        temperature: float = 0.8,
        top_k: int = 40,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Sample new_tokens continuations of idx [B, T] (top-k, temperature)."""
        for _ in range(new_tokens):
            logits = self(idx[:, -self.cfg.context :])[:, -1, :].float() / temperature
            kth = torch.topk(logits, top_k).values[:, -1:]
            probs = F.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], dim=1)
        return idx


class _LinearCrossEntropy(torch.autograd.Function):
    """mean_i CE(h_i @ W.T, y_i) with grads computed in the forward pass, chunk by chunk over rows.

    For each chunk: logits = h W^T (fp32 accumulate), loss += logsumexp - logit[y];
    softmax - onehot overwrites the logits in place and gives dh = g W and dW += g^T h at once.
    Under autocast the two matmuls run in the autocast dtype, the softmax in fp32.
    """

    @staticmethod
    def forward(ctx, h, w, y, chunk: int, mm_dtype):
        n = h.shape[0]
        dtypes = (h.dtype, w.dtype)
        if mm_dtype is not None:  # matmuls in mm_dtype (e.g. bf16 on AMX CPUs), softmax and sums in fp32
            h, w = h.to(mm_dtype), w.to(mm_dtype)
        dh = torch.empty(h.shape, dtype=torch.float32, device=h.device)
        dw = torch.zeros(w.shape, dtype=torch.float32, device=w.device)
        total = torch.zeros((), dtype=torch.float32, device=h.device)
        for s in range(0, n, chunk):
            hc, yc = h[s : s + chunk], y[s : s + chunk]
            logits = (hc @ w.t()).float()
            lse = torch.logsumexp(logits, dim=-1)
            rows = torch.arange(len(yc), device=h.device)
            total += (lse - logits[rows, yc]).sum()
            g = logits.sub_(lse[:, None]).exp_()  # softmax, in place
            g[rows, yc] -= 1.0
            if g.dtype != hc.dtype and not torch.is_autocast_enabled(h.device.type):
                g = g.to(hc.dtype)
            dh[s : s + chunk] = g @ w
            dw += g.t() @ hc
        ctx.save_for_backward(dh, dw)
        ctx.dtypes = dtypes
        return total / n

    @staticmethod
    def backward(ctx, grad):
        dh, dw = ctx.saved_tensors
        scale = grad / dh.shape[0]
        return (dh * scale).to(ctx.dtypes[0]), (dw * scale).to(ctx.dtypes[1]), None, None, None


def linear_cross_entropy(
    h: torch.Tensor, w: torch.Tensor, y: torch.Tensor, chunk: int = 512, mm_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """Mean cross-entropy of logits h @ w.T against y, without storing the [N, V] logits."""
    if not torch.is_grad_enabled() or not (h.requires_grad or w.requires_grad):
        if mm_dtype is not None:
            h, w = h.to(mm_dtype), w.to(mm_dtype)
        return F.cross_entropy(F.linear(h, w).float(), y)
    return _LinearCrossEntropy.apply(h, w, y, chunk, mm_dtype)


# ---------------------------------------------------------------- accounting (no weights needed)


def param_counts(cfg: GPTConfig) -> dict:
    """Parameter counts by part, by hand (a test checks them against the real module)."""
    d, V, L = cfg.dim, cfg.vocab, cfg.layers
    per_block = (2 * d) + (3 * d * d + 3 * d) + (d * d + d) + (2 * d) + (4 * d * d + 4 * d) + (4 * d * d + d)
    embedding = V * d
    position = cfg.context * d if cfg.pos == "learned" else 0
    head = 0 if cfg.tie else V * d
    total = embedding + position + L * per_block + 2 * d + head
    return {
        "params": total,
        "embedding_params": embedding,
        "position_params": position,
        "head_params": head,
        "block_params": L * per_block,
        "embedding_share": embedding / total,
    }


def flops_per_token(cfg: GPTConfig) -> dict:
    """Matmul FLOPs per token (nanoGPT/PaLM convention: train = 3 x forward, full T x T scores)."""
    d, V, L, T = cfg.dim, cfg.vocab, cfg.layers, cfg.context
    attn_proj = 2 * L * 4 * d * d  # qkv + output projection, forward
    attn_scores = 2 * L * 2 * T * d  # q.k^T and att.v, forward
    mlp = 2 * L * 8 * d * d  # fc and fc_proj, forward
    head = 2 * V * d  # logits, forward
    forward = attn_proj + attn_scores + mlp + head
    return {
        "attention_fwd": attn_proj + attn_scores,
        "attention_scores_fwd": attn_scores,
        "mlp_fwd": mlp,
        "head_fwd": head,
        "forward": forward,
        "train": 3 * forward,
    }


def accounting(cfg: GPTConfig) -> dict:
    """Everything `rag lm info` prints: params, bytes, training memory, FLOPs, the 1.5*sqrt(V) rule."""
    counts = param_counts(cfg)
    P = counts["params"]
    flops = flops_per_token(cfg)
    return {
        **cfg.to_dict(),
        **counts,
        "bytes_fp32": 4 * P,
        "bytes_fp16": 2 * P,
        "train_mem_est_bytes": 16 * P,  # fp32 weights + grads + Adam m and v
        "heuristic_dim_1_5_sqrt_v": 1.5 * math.sqrt(cfg.vocab),
        "flops_per_token": flops["train"],
        "flops": flops,
    }
