"""The reader's torch model: MiniLM with low-rank adapters and a span head; loading the saved weights; the ONNX export.

Only training (rag.agent.reader_train) and the one-time export (rag.agent.reader.load_session) import this module,
so the query path stays torch-free.

Adapters: rank RANK on every linear layer of MiniLM's 6 blocks (query, key, value, the attention output, both
feed-forward layers), scaled by ALPHA / RANK; MiniLM's LayerNorms and the 384→2 span head are trained too.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

RANK = 32
ALPHA = 64
TARGETS = ("query", "key", "value", "attention.output.dense", "intermediate.dense", "output.dense")


def build_model():
    """MiniLM with adapters and a span head; returns (model, trainable parameters by name)."""
    import torch
    from transformers import AutoModel

    from rag.encoders.onnx import minilm_dir

    class LoRALinear(torch.nn.Module):
        def __init__(self, base: torch.nn.Linear):
            super().__init__()
            self.base = base
            self.lora_a = torch.nn.Parameter(torch.randn(RANK, base.in_features) / math.sqrt(base.in_features))
            self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, RANK))

        def forward(self, x):
            return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * (ALPHA / RANK)

    class SpanReader(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(minilm_dir()), add_pooling_layer=False)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 2)

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            logits = self.head(h.last_hidden_state)
            big = torch.finfo(logits.dtype).min / 2
            logits = logits.masked_fill(attention_mask.unsqueeze(-1) == 0, big)
            return logits[..., 0], logits[..., 1]

    model = SpanReader()
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in model.bert.encoder.layer:
        for target in TARGETS:
            parent_name, _, leaf = f"{target}".rpartition(".")
            owner = layer.attention.self if target in ("query", "key", "value") else layer.get_submodule(parent_name)
            setattr(owner, leaf, LoRALinear(getattr(owner, leaf)))
    for name, p in model.named_parameters():
        if "lora_" in name or "LayerNorm" in name or name.startswith("head."):
            p.requires_grad_(True)
    trainable = {n: p for n, p in model.named_parameters() if p.requires_grad}
    return model, trainable


def save_weights(trainable: dict, path: Path) -> None:
    np.savez_compressed(path, **{n: p.detach().cpu().numpy().astype(np.float32) for n, p in trainable.items()})


def load_weights(model, path: Path) -> None:
    import torch

    saved = np.load(path)
    params = dict(model.named_parameters())
    missing = [n for n in saved.files if n not in params]
    if missing:
        from rag.config import RagError

        raise RagError(f"reader weights {path} do not match the model ({missing[:3]} ...); re-train: rag train reader")
    with torch.no_grad():
        for n in saved.files:
            params[n].copy_(torch.from_numpy(saved[n]))


def export_reader(weights: Path, target: Path) -> None:
    """Merge the adapters into MiniLM and torch.onnx.export (input_ids, attention_mask, token_type_ids) →
    (start_logits, end_logits), with dynamic batch and sequence axes."""
    import warnings

    import torch

    from rag.encoders.onnx import INPUTS, OPSET

    model, _ = build_model()
    load_weights(model, weights)
    model.eval()
    with torch.no_grad():  # merge: W + (alpha/r)·B·A, so the exported graph is the plain MiniLM shape
        for module in list(model.modules()):
            for name, child in list(module.named_children()):
                if hasattr(child, "lora_a"):
                    child.base.weight += (child.lora_b @ child.lora_a) * (ALPHA / RANK)
                    setattr(module, name, child.base)
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]])
    example = (ids, (ids > 0).long(), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    axes |= {"start_logits": {0: "batch", 1: "tokens"}, "end_logits": {0: "batch", 1: "tokens"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            example,
            str(target),
            input_names=list(INPUTS),
            output_names=["start_logits", "end_logits"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
