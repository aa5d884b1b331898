"""The injection classifier's torch model: MiniLM with low-rank adapters (rag.models.adapters), mean pooling over
the tokens and a 384→1 head (the logit that a text addresses the model). Loading the saved weights; the ONNX export.

Only training (rag.training.screen_fit) and the one-time export (rag.screen.classifier) import this
module, so the query path stays torch-free.
"""

from __future__ import annotations

from pathlib import Path

RANK = 8
ALPHA = 16
RETRAIN = "rag train screen"


def build_model(rank: int = RANK):
    """MiniLM with adapters, mean pooling and a logit head; returns (model, trainable parameters by name)."""
    import torch
    from transformers import AutoModel

    from rag.encoders.onnx import minilm_dir
    from rag.models.adapters import add_adapters

    class InjectionClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = AutoModel.from_pretrained(str(minilm_dir()), add_pooling_layer=False)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            mask = attention_mask.unsqueeze(-1).to(h.last_hidden_state.dtype)
            pooled = (h.last_hidden_state * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    model = InjectionClassifier()
    return model, add_adapters(model, model.bert, rank, ALPHA)  # a soup of n runs: rank n·RANK, scale ALPHA/(n·RANK)


def export_classifier(weights: Path, target: Path) -> None:
    """Merge the adapters into MiniLM and export (input_ids, attention_mask, token_type_ids) → logit [batch]."""
    from rag.models.adapters import export_onnx, load_weights, merge, saved_rank

    model, _ = build_model(saved_rank(weights, RANK))
    load_weights(model, weights, RETRAIN)
    model.eval()
    merge(model)
    export_onnx(model, target, ["logit"], token_outputs=False)
