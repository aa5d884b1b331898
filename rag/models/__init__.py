"""The small trained models the query path runs, each a weights file with a JSON card beside it (the command that
trained it, its data, its sha256 and its figures), and the ONNX sessions that run them.

| weights | what it is | re-trained by |
|---|---|---|
| reader_weights.npz | the span reader: low-rank adapters over MiniLM and a span head | `rag train reader` |
| sentence_rank_weights.npz | the sentence ranker's logistic regression | `rag train sentence-rank` |
| multihop_weights.npz | the hop classifier's logistic regression | `rag train hops` |
| injection_classifier.npz | the injection classifier: adapters over MiniLM and a head | `rag train screen` |
| injection_verifier.npz | the injection verifier: an RBF SVM over SmolLM2 states | `rag train screen-verifier` |
"""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent


def model_file(name: str) -> Path:
    """The committed file `name` in this folder."""
    return MODELS_DIR / name


def minilm_tokenizer():
    """The packaged MiniLM's fast tokenizer (tokenizers library; no torch), without truncation or padding."""
    from tokenizers import Tokenizer

    from rag.encoders.onnx import minilm_dir

    tok = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok
