"""A trained checkpoint's input-embedding table as a retrieval encoder: `lm:<run dir>`.

`lm:<dir>` mean-pools the rows of the tokens of a text (like smollm2-input-mean);
`lm:<dir>#idf` weights the rows by inverse document frequency fitted on the documents
(rag.encoders.embed_corpus calls .fit). No forward pass: the table lookup is the point.
Register with rag.encoders.register_encoder("lm:", load_lm_encoder).
"""
from __future__ import annotations

from pathlib import Path

from rag.config import RagError


class _BPEIds:
    """Adapter: a `tokenizers.Tokenizer` with the encode(text, add_special_tokens=False) -> ids call TableEncoder uses."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids


def load_lm_encoder(name: str):
    """Encoder for 'lm:<checkpoint dir>[#idf]': .name, .dim, encode(texts, kind, progress) -> float32 [n, d]."""
    from safetensors.torch import load_file

    from rag.encoders import TableEncoder
    from rag.lm.checkpoint import ckpt_dir
    from rag.lm.data import load_tokenizer

    if not name.startswith("lm:"):
        raise RagError(f"encoder name {name!r} must look like lm:<checkpoint dir> (a rag lm train --out folder)")
    spec = name[3:]
    pooling = "idf" if spec.endswith("#idf") else "mean"
    run = Path(spec.removesuffix("#idf")).expanduser()
    weights = run / "model.safetensors"
    if not weights.exists():
        weights = ckpt_dir(run) / "model.safetensors"
    tok_path = run / "tokenizer.json"
    if not weights.exists() or not tok_path.exists():
        raise RagError(f"{run} is not an LM checkpoint (need tokenizer.json and ckpt/model.safetensors); "
                       "train one with: rag lm train --out DIR")
    table = load_file(str(weights))["wte.weight"].float().numpy()
    return TableEncoder(name, _BPEIds(load_tokenizer(tok_path)), table, pooling=pooling)
