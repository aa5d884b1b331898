"""Train one GPT on a WikiText-layout corpus: AdamW, warm-up + cosine, clipping, checkpoints, resume, DDP.

`train(TrainConfig(...), progress=callback)` returns the result row (the sweep's CSV columns).
Under `torchrun --nproc_per_node=N` it trains with DistributedDataParallel (gloo on CPU, nccl on
CUDA); every rank draws its own batches, rank 0 writes the run directory.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import asdict
from pathlib import Path

from rag.config import RagError
from rag.lm import checkpoint as ckpt
from rag.lm.data import PROBE_STEP, eval_batches, eval_token_count, prepare, train_batch
from rag.lm.model import GPT, accounting
from rag.lm.runtime import (
    Runtime,
    choose,
    current_memory,
    flops_peak,
    is_oom,
    oom_error,
    peak_memory,
    reset_peak_memory,
)
from rag.lm.settings import TrainConfig

SAMPLE_PROMPTS = ("The history of", "In 1998 , the", "The album was")


def lr_at(step: int, total: int, warmup: int, peak: float, min_ratio: float) -> float:
    """Linear warm-up to peak, then cosine decay to min_ratio * peak at the last step."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def warmup_steps(cfg: TrainConfig, total: int) -> int:
    """Warm-up steps: given, or a fixed fraction of the run, or (the old default) 10% capped at 100."""
    if cfg.warmup is not None:
        return cfg.warmup
    if cfg.warmup_frac is not None:
        return max(1, round(cfg.warmup_frac * total))
    return min(100, max(1, total // 10))


def eval_interval(cfg: TrainConfig, total: int, train_tokens: int, tokens_per_step: int) -> int:
    """Steps between validations: a fraction of an epoch (eval_every), else `slices` per run (at least one per epoch)."""
    if cfg.eval_every:
        return max(1, round(cfg.eval_every * train_tokens / tokens_per_step))
    return max(1, math.ceil(total / max(cfg.slices, math.ceil(cfg.epochs or 0))))


def track_best(state: dict, val_loss: float, step: int, patience: int | None) -> bool:
    """Record the best slice validation loss in state; True when early stopping should end the run."""
    if state.get("best_val_loss") is None or val_loss < state["best_val_loss"]:
        state["best_val_loss"], state["best_step"], state["evals_since_best"] = val_loss, step, 0
    else:
        state["evals_since_best"] = state.get("evals_since_best", 0) + 1
    if patience is not None and state["evals_since_best"] >= patience:
        state["stopped_early_at"] = step
        return True
    return False


def make_optimizer(model, cfg: TrainConfig, device: str):
    import torch

    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.learning_rate(), betas=(0.9, 0.95), fused=device == "cuda")


def plan_steps(cfg: TrainConfig, train_tokens: int, tokens_per_step: int, rate: float | None = None) -> int:
    """Total optimiser steps from --tokens, --epochs or --minutes (rate: measured tokens/s)."""
    if cfg.tokens:
        return max(1, math.ceil(cfg.tokens / tokens_per_step))
    if cfg.minutes:
        return max(1, int(cfg.minutes * 60 * rate / tokens_per_step))
    return max(1, math.ceil((cfg.epochs or 1.0) * train_tokens / tokens_per_step))


def evaluate(model, ids, rt: Runtime, batch: int, max_tokens: int | None) -> float:
    """Mean cross-entropy (nats per token) over the first max_tokens targets of a split."""
    import torch
    import torch.nn.functional as F

    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad(), rt.autocast():
        for x, y in eval_batches(ids, batch, model.cfg.context, max_tokens):
            logits = model(x.to(rt.device))
            total += F.cross_entropy(logits.float().flatten(0, 1), y.to(rt.device).flatten(), reduction="sum").item()
            count += y.numel()
    model.train(was_training)
    return total / max(1, count)


def sample_text(model, tokenizer, rt: Runtime, n: int, new_tokens: int = 40, seed: int = 0) -> list[str]:
    """n generated continuations of fixed prompts (top-k 40, temperature 0.8, fixed seed)."""
    import torch

    gen = torch.Generator(device=rt.device).manual_seed(seed)
    texts = []
    for prompt in (SAMPLE_PROMPTS * n)[:n]:
        idx = torch.tensor([tokenizer.encode(prompt).ids], device=rt.device)
        with rt.autocast():
            out = model.generate(idx, new_tokens, generator=gen)
        texts.append(tokenizer.decode(out[0].tolist()).replace("\n", " ").strip())
    return texts


def train(cfg: TrainConfig, progress=None) -> dict:
    """Train (or resume) one model; returns the result row and writes the run directory."""
    import torch

    mcfg = cfg.model.check()  # refuse impossible shapes before any data or weights
    out = Path(cfg.out)
    state = ckpt.read_state(out) if cfg.resume else None
    if cfg.resume and state is None:
        raise RagError(f"--resume: no checkpoint in {out}; start the run without --resume")
    if state is not None:
        ckpt.check_shape(state["model"], mcfg.to_dict(), out)
    elif ckpt.read_state(out) is not None:
        raise RagError(f"{out} already holds a run; add --resume to continue it or pick another --out")
    rt = choose(cfg.precision, cfg.compile, cfg.threads, mcfg.dim)
    if rt.main:
        tok = prepare(cfg.corpus, mcfg.vocab)
    if rt.world > 1:
        torch.distributed.barrier()
    if not rt.main:
        tok = prepare(cfg.corpus, mcfg.vocab)
    train_ids = tok.ids["train"]
    if len(train_ids) < mcfg.context + 2 or len(tok.ids["valid"]) < mcfg.context + 1:
        raise RagError(
            f"corpus {cfg.corpus!r} is too short for --context {mcfg.context}: train has {len(train_ids)} "
            f"tokens, valid {len(tok.ids['valid'])}; use a bigger corpus or a smaller --context"
        )
    torch.manual_seed(cfg.seed)
    try:
        model = rt.prepare_model(GPT(mcfg).to(rt.device))
        optimizer = make_optimizer(model, cfg, rt.device)
    except (RuntimeError, MemoryError) as exc:
        if is_oom(exc):
            raise oom_error(mcfg.dim, cfg.batch, "allocating the model") from exc
        raise
    tokens_per_step = cfg.batch * mcfg.context * rt.world
    state = start_or_resume(cfg, mcfg, out, state, rt, tok, model, optimizer, tokens_per_step)
    total = state["total_steps"]
    every = eval_interval(cfg, total, len(train_ids), tokens_per_step)
    warmup = warmup_steps(cfg, total)
    state["warmup"] = warmup
    step_model = torch.compile(model) if rt.compile else model
    if rt.world > 1:
        from torch.nn.parallel import DistributedDataParallel

        step_model = DistributedDataParallel(step_model)
    reset_peak_memory(rt.device)
    state["mem_baseline_bytes"] = current_memory(rt.device)
    curve = open(out / "curve.jsonl", "a") if rt.main else None
    model.train()
    try:
        for step in range(total if state.get("stopped_early_at") else state["step"], total):
            t0 = time.perf_counter()
            lr = lr_at(step, total, warmup, cfg.learning_rate(), cfg.min_lr_ratio)
            for group in optimizer.param_groups:
                group["lr"] = lr
            x, y = train_batch(train_ids, step, cfg.batch, mcfg.context, cfg.seed, rt.rank)
            value = optimizer_step(step_model, model, optimizer, x, y, rt, cfg, step)
            state["train_s"] += time.perf_counter() - t0
            row = {"step": step + 1, "tokens": (step + 1) * tokens_per_step, "loss": round(value, 5), "lr": lr}
            if (step + 1) % every == 0 or step + 1 == total:
                row["val_loss"] = round(evaluate(model, tok.ids["valid"], rt, cfg.batch, cfg.slice_eval_tokens), 5)
                if cfg.curve_test:
                    row["test_loss"] = round(evaluate(model, tok.ids["test"], rt, cfg.batch, cfg.slice_eval_tokens), 5)
                state["step"] = step + 1
                stop = track_best(state, row["val_loss"], step + 1, cfg.patience)
                if rt.main:
                    curve.write(json.dumps(row) + "\n")
                    curve.flush()
                    if cfg.best_val and state["best_step"] == step + 1:
                        ckpt.save_best(out, model, state)
                    ckpt.save(out, model, optimizer, state, rng=ckpt.rng_state())
                if stop:
                    break
            elif rt.main:
                curve.write(json.dumps(row) + "\n")
                curve.flush()
            if progress:
                progress(
                    {
                        "dim": mcfg.dim,
                        "step": step + 1,
                        "total": total,
                        "loss": value,
                        "tokens_per_s": (step + 1) * tokens_per_step / max(1e-9, state["train_s"]),
                    }
                )
    finally:
        if curve:
            curve.close()
    peak_mem = peak_memory(rt.device)
    if cfg.best_val and state.get("best_step") and state["best_step"] != state["step"]:
        ckpt.load_weights(model, ckpt.best_dir(out))  # score the best validation checkpoint, not the last
    result = finish(model, tok, cfg, rt, state, tokens_per_step, peak_mem)
    if rt.world > 1:
        write_rank_checksum(model, out, rt.rank)
        torch.distributed.barrier()
    return result


def start_or_resume(cfg: TrainConfig, mcfg, out: Path, state, rt, tok, model, optimizer, tokens_per_step) -> dict:
    """A fresh run's state (its step budget planned, its run folder started), or the resumed run's weights loaded."""
    if state is None:
        train_ids = tok.ids["train"]
        rate = probe_rate(model, train_ids, cfg, rt) if cfg.minutes and not cfg.tokens else None
        state = {
            "model": mcfg.to_dict(),
            "train": _train_dict(cfg),
            "step": 0,
            "train_s": 0.0,
            "total_steps": plan_steps(cfg, len(train_ids), tokens_per_step, rate),
            "runtime": rt.describe(),
        }
        if rt.main:
            out.mkdir(parents=True, exist_ok=True)
            (out / "config.json").write_text(json.dumps({"model": state["model"], "train": state["train"]}, indent=1))
            shutil.copy(tok.tokenizer_path, out / "tokenizer.json")
            (out / "curve.jsonl").write_text("")
        return state
    ckpt.load_weights(model, ckpt.ckpt_dir(out))
    ckpt.load_optimizer(optimizer, out)
    ckpt.load_rng(out)  # dropout draws continue where the checkpoint left them
    if rt.main:
        ckpt.truncate_curve(out, state["step"])
    return state


def optimizer_step(step_model, model, optimizer, x, y, rt, cfg: TrainConfig, step: int) -> float:
    """Forward, backward, clip, update: one optimiser step; returns the loss (refusing a non-finite one)."""
    import torch

    dim = model.cfg.dim
    try:
        with rt.autocast():
            _, loss = step_model(x.to(rt.device), y.to(rt.device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    except (RuntimeError, MemoryError) as exc:
        if is_oom(exc):
            raise oom_error(dim, cfg.batch, f"training step {step + 1}") from exc
        raise
    value = loss.item()
    if not math.isfinite(value):
        raise RagError(
            f"loss became {value} at step {step + 1} for d={dim}; lower --lr "
            f"(now {cfg.learning_rate():.2e}) or use --precision fp32, then start again"
        )
    return value


def _train_dict(cfg: TrainConfig) -> dict:
    d = asdict(cfg)
    d.pop("model")
    return d


def probe_rate(model, train_ids, cfg: TrainConfig, rt: Runtime) -> float:
    """Tokens/s of two forward+backward passes (no weight update), to turn --minutes into steps."""
    for i in range(3):
        x, y = train_batch(train_ids, PROBE_STEP + i, cfg.batch, model.cfg.context, cfg.seed, rt.rank)
        t0 = time.perf_counter()
        with rt.autocast():
            _, loss = model(x.to(rt.device), y.to(rt.device))
        loss.backward()
        seconds = time.perf_counter() - t0
    model.zero_grad(set_to_none=True)
    return cfg.batch * model.cfg.context * rt.world / seconds


def baseline_figures(tok, context: int, eval_tokens: int | None) -> dict:
    """The count baselines on this run's evaluation targets (cached per corpus, context and slice)."""
    from rag.lm.baselines import baselines

    key = (str(tok.folder), context, eval_tokens)
    if key not in BASELINE_CACHE:
        BASELINE_CACHE[key] = baselines(tok, context, eval_tokens)
    return BASELINE_CACHE[key]


BASELINE_CACHE: dict = {}


def finish(model, tok, cfg: TrainConfig, rt: Runtime, state: dict, tokens_per_step: int, peak_mem: int) -> dict:
    """Final evaluation and the result row (CSV columns + extras); rank 0 writes result.json."""
    from rag.lm.runtime import both_peaks

    mcfg = model.cfg
    acc = accounting(mcfg)
    val = evaluate(model, tok.ids["valid"], rt, cfg.batch, cfg.eval_tokens)
    test = evaluate(model, tok.ids["test"], rt, cfg.batch, cfg.eval_tokens)
    base = baseline_figures(tok, mcfg.context, cfg.eval_tokens)
    tokens_seen = state["step"] * tokens_per_step
    rate = tokens_seen / max(1e-9, state["train_s"])
    if cfg.measure_peak:
        peak, peak_source = flops_peak(rt)
        peaks = both_peaks(rt.device)
    else:  # MFU not wanted (the iso-FLOP grid): skip the matmul peak measurement
        peak, peak_source, peaks = float("nan"), "not measured", {"fp32": float("nan"), "bf16": float("nan")}
    achieved = acc["flops_per_token"] * rate
    bits = lambda nats, split: nats * base["targets"][split] / math.log(2) / base["bytes"][split]  # noqa: E731
    bigram = base["models"]["bigram"]
    result = {
        "dim": mcfg.dim,
        "layers": mcfg.layers,
        "heads": mcfg.heads,
        "vocab": mcfg.vocab,
        "tied": mcfg.tie,
        "pos": mcfg.pos,
        "init": mcfg.init,
        "params": acc["params"],
        "embedding_params": acc["embedding_params"],
        "position_params": acc["position_params"],
        "embedding_share": round(acc["embedding_share"], 4),
        "bytes_fp32": acc["bytes_fp32"],
        "bytes_fp16": acc["bytes_fp16"],
        "train_mem_est_bytes": acc["train_mem_est_bytes"],
        "tokens_seen": tokens_seen,
        "train_flops": acc["flops_per_token"] * tokens_seen,
        "val_loss": round(val, 4),
        "test_loss": round(test, 4),
        "val_ppl": round(math.exp(val), 2),
        "test_ppl": round(math.exp(test), 2),
        "val_bpb": round(bits(val, "valid"), 4),
        "test_bpb": round(bits(test, "test"), 4),
        "bigram_test_ppl": bigram["test_ppl"],
        "vs_bigram_test_ppl": round(math.exp(test) / bigram["test_ppl"], 3),
        "epoch_s": round(len(tok.ids["train"]) / rate, 1),
        "tokens_per_s": round(rate, 1),
        "peak_mem_bytes": peak_mem,
        "flops_per_token": acc["flops_per_token"],
        "achieved_flops": round(achieved),
        "mfu": round(achieved / peak, 4) if peak == peak else None,
        "mfu_fp32": round(achieved / peaks["fp32"], 4) if peaks["fp32"] == peaks["fp32"] else None,
        "mfu_bf16": round(achieved / peaks["bf16"], 4) if peaks["bf16"] == peaks["bf16"] else None,
        "device": rt.describe(),
        # extras (results.json only)
        "train_s": round(state["train_s"], 1),
        "steps": state["step"],
        "batch": cfg.batch,
        "context": mcfg.context,
        "lr": cfg.learning_rate(),
        "warmup_steps": state.get("warmup"),
        "total_steps": state["total_steps"],
        "best_step": state.get("best_step"),
        "best_slice_val_loss": state.get("best_val_loss"),
        "stopped_early_at": state.get("stopped_early_at"),
        "scored": "best-val" if cfg.best_val else "last",
        "seed": cfg.seed,
        "precision": rt.precision,
        "peak_flops": round(peak) if peak == peak else None,
        "peak_source": peak_source,
        "peak_fp32_flops": round(peaks["fp32"]) if peaks["fp32"] == peaks["fp32"] else None,
        "peak_bf16_flops": round(peaks["bf16"]) if peaks["bf16"] == peaks["bf16"] else None,
        "eval_tokens": {
            "valid": eval_token_count(tok.ids["valid"], mcfg.context, cfg.eval_tokens),
            "test": eval_token_count(tok.ids["test"], mcfg.context, cfg.eval_tokens),
        },
        "eval_bytes": base["bytes"],
        "baselines": base["models"],
        "baseline_k": {"k2": base["k2"], "k3": base["k3"]},
        "mem_baseline_bytes": state.get("mem_baseline_bytes"),
        "corpus": tok.corpus.name,
        "train_tokens_per_epoch": int(len(tok.ids["train"])),
    }
    if rt.main:
        from rag.lm.data import load_tokenizer

        result["samples"] = (
            sample_text(model, load_tokenizer(tok.tokenizer_path), rt, cfg.samples) if cfg.samples else []
        )
        (Path(cfg.out) / "result.json").write_text(json.dumps(result, indent=1))
    return result


def write_rank_checksum(model, out: Path, rank: int) -> None:
    """Each DDP rank writes the sha256 of its weights to out/ddp/rank<r>.sha256 (the test compares them)."""
    import hashlib

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    (out / "ddp").mkdir(parents=True, exist_ok=True)
    (out / "ddp" / f"rank{rank}.sha256").write_text(h.hexdigest())
