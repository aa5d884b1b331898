"""The reader's torch model: MiniLM with low-rank adapters (rag.models.adapters) and a span head; loading the saved
weights; the ONNX export.

Only training (rag.training.reader_fit) and the one-time export (rag.answer.reader.load_session) import this module,
so the query path stays torch-free.

Adapters: rank RANK on every linear layer of MiniLM's 6 blocks, scaled by ALPHA / RANK; MiniLM's LayerNorms and
the 384→2 span head are trained too.
"""

from __future__ import annotations

from pathlib import Path

RANK = 32
ALPHA = 64
RETRAIN = "rag train reader"


def build_model(rank: int = RANK):
    """MiniLM with adapters and a span head; returns (model, trainable parameters by name)."""
    import torch
    from transformers import AutoModel

    from rag.encoders.onnx import minilm_dir
    from rag.models.adapters import add_adapters

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
    return model, add_adapters(model, model.bert, rank, ALPHA)  # a soup of n runs: rank n·RANK, scale ALPHA/(n·RANK)


def load_weights(model, path: Path) -> None:
    from rag.models.adapters import load_weights as load

    load(model, path, RETRAIN)


def export_reader(weights: Path, target: Path) -> None:
    """Merge the adapters into MiniLM and export (input_ids, attention_mask, token_type_ids) → (start_logits,
    end_logits), with dynamic batch and sequence axes."""
    from rag.models.adapters import export_onnx, merge, saved_rank

    model, _ = build_model(saved_rank(weights, RANK))
    load_weights(model, weights)
    model.eval()
    merge(model)
    export_onnx(model, target, ["start_logits", "end_logits"], token_outputs=True)
