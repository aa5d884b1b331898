"""Low-rank adapters (LoRA) on the packaged MiniLM, shared by the two models fine-tuned on it: the span reader
(rag.answer.reader_model) and the injection classifier (rag.screen.classifier_model).

Each target linear layer W of MiniLM's blocks becomes W·x + (alpha/rank)·B·A·x with A (rank × in) random and B
(out × rank) zero, so training starts from MiniLM itself. Only A, B, the LayerNorms and the model's head are
trained and saved (numpy .npz, a few MB); merge() folds B·A back into W before the ONNX export, so the exported
graph has MiniLM's plain shape. Imported only by training and export (it imports torch).

Own code rather than peft: the adapters are twenty lines, the saved names stay stable across peft versions, and
the torch-free query path never needs the package.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

# Every linear layer of a BERT block: query, key, value, the attention output, both feed-forward layers.
TARGETS = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")


class LoRALinear(torch.nn.Module):
    def __init__(self, base: torch.nn.Linear, rank: int, alpha: float):
        super().__init__()
        self.base, self.scale = base, alpha / rank
        self.lora_a = torch.nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
        self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale


def add_adapters(model: torch.nn.Module, bert, rank: int, alpha: float) -> dict:
    """Freeze model, put adapters on every TARGETS layer of bert's blocks, make the adapters, bert's LayerNorms and
    every parameter whose name starts with "head." trainable; return the trainable parameters by name."""
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in bert.encoder.layer:
        for target in TARGETS:
            parent_name, _, leaf = target.rpartition(".")
            owner = layer.attention.self if target in ("query", "key", "value") else layer.get_submodule(parent_name)
            setattr(owner, leaf, LoRALinear(getattr(owner, leaf), rank, alpha))
    for name, p in model.named_parameters():
        if "lora_" in name or "LayerNorm" in name or name.startswith("head."):
            p.requires_grad_(True)
    return {n: p for n, p in model.named_parameters() if p.requires_grad}


def merge(model: torch.nn.Module) -> None:
    """Fold every adapter into its base layer (W += scale·B·A) and put the base layer back in its place."""
    with torch.no_grad():
        for module in list(model.modules()):
            for name, child in list(module.named_children()):
                if isinstance(child, LoRALinear):
                    child.base.weight += (child.lora_b @ child.lora_a) * child.scale
                    setattr(module, name, child.base)


def save_weights(trainable: dict, path: Path) -> None:
    np.savez_compressed(path, **{n: p.detach().cpu().numpy().astype(np.float32) for n, p in trainable.items()})


def average_weights(paths: list[Path], out: Path) -> None:
    """A "model soup" (Wortsman et al., 2022) of runs fine-tuned from the same MiniLM: the mean of their updates.
    Each adapter's B·A is averaged exactly by stacking the runs' A and B along the rank (rank r·n with scale
    alpha/(r·n) gives mean(B_i·A_i)·alpha/r); LayerNorms and heads are averaged."""
    runs = [dict(np.load(p)) for p in paths]
    soup = {}
    for name in runs[0]:
        if name.endswith("lora_a"):
            soup[name] = np.concatenate([r[name] for r in runs], axis=0)
        elif name.endswith("lora_b"):
            soup[name] = np.concatenate([r[name] for r in runs], axis=1)
        else:
            soup[name] = np.mean([r[name] for r in runs], axis=0)
    np.savez_compressed(out, **{n: v.astype(np.float32) for n, v in soup.items()})


def saved_rank(path: Path, default: int) -> int:
    """The adapters' rank in a weights file (a soup of n runs has n times its runs' rank)."""
    with np.load(path) as saved:
        ranks = [saved[n].shape[0] for n in saved.files if n.endswith("lora_a")]
    return ranks[0] if ranks else default


def load_weights(model: torch.nn.Module, path: Path, retrain: str) -> None:
    """Copy saved parameters into model; a name the model lacks means the file belongs to another model."""
    saved = np.load(path)
    params = dict(model.named_parameters())
    missing = [n for n in saved.files if n not in params]
    if missing:
        from rag.config import RagError

        raise RagError(f"weights {path} do not match the model ({missing[:3]} ...); re-train: {retrain}")
    with torch.no_grad():
        for n in saved.files:
            params[n].copy_(torch.from_numpy(saved[n]))


def export_onnx(model: torch.nn.Module, target: Path, outputs: list[str], token_outputs: bool) -> None:
    """torch.onnx.export of model(input_ids, attention_mask, token_type_ids) with dynamic batch and token axes;
    outputs are per token ([batch, tokens]) when token_outputs, else per text ([batch])."""
    import warnings

    from rag.encoders.onnx import INPUTS, OPSET

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    example = (ids, (ids > 0).long(), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    axes |= {name: ({0: "batch", 1: "tokens"} if token_outputs else {0: "batch"}) for name in outputs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            example,
            str(target),
            input_names=list(INPUTS),
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
