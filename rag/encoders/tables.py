"""Encoders that pool rows of an LLM's input-embedding table: no forward pass, the table lookup is the point.

- `smollm2-input`: SmolLM2-135M's table (576-d), IDF-weighted pooling.
- `smollm2-input-mean`: the same table, plain mean pooling.
- `smollm2-input-wbm25`: the table whitened at the token level (rows centred and decorrelated under the corpus's
  token frequencies, with shrinkage), then pooled with BM25 weights (saturated tf × IDF for documents, tf × IDF
  for queries). The evaluation's best SmolLM2 variant.
- `lm:<run dir>[#idf]`: the input table of one of our own LMs (`rag lm train --out DIR`), read straight from its
  safetensors checkpoint and BPE tokenizer; mean pooling, or IDF with `#idf`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.config import RagError


class TableEncoder:
    """Pools rows of an input-embedding table. pooling="mean": plain average; "idf": weighted by each token's
    inverse document frequency in the fitted corpus."""

    def __init__(self, name: str, tokenizer, table: np.ndarray, pooling: str = "idf"):
        self.name, self.tokenizer, self.table, self.pooling = name, tokenizer, table.astype(np.float32), pooling
        self.dim = table.shape[1]
        self.idf: np.ndarray | None = None

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        return [self.tokenizer.encode(t, add_special_tokens=False)[:512] for t in texts]

    def fit(self, doc_texts: list[str]) -> None:
        df = np.zeros(len(self.table), np.float64)
        for ids in self.token_ids(doc_texts):
            df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
        self.idf = np.log((len(doc_texts) + 1) / (df + 1)).astype(np.float32) + 1e-3

    def get_state(self) -> dict[str, np.ndarray]:
        return {"idf": self.idf} if self.idf is not None else {}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        if "idf" in state:
            self.idf = state["idf"]

    def encode(self, texts, kind="query", progress=None) -> np.ndarray:
        if self.pooling == "idf" and self.idf is None:
            raise RagError(
                f"encoder {self.name} needs IDF statistics; fit it on the documents first (embed_corpus does)"
            )
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, ids in enumerate(self.token_ids(texts)):
            if ids:
                rows = self.table[ids]
                w = self.idf[ids] if self.pooling == "idf" else np.ones(len(ids), np.float32)
                out[i] = (w[:, None] * rows).sum(0) / w.sum()
            if progress and (i % 500 == 0 or i == len(texts) - 1):
                progress(i + 1, len(texts))
        return out


class WhitenedBM25TableEncoder(TableEncoder):
    """Token-whitened input-embedding table, BM25-weighted pooling (see the module docstring)."""

    def __init__(self, name, tokenizer, table, shrink: float = 0.1, k1: float = 1.2, b: float = 0.75):
        super().__init__(name, tokenizer, table, pooling="idf")
        self.shrink, self.k1, self.b = shrink, k1, b
        self.state: dict[str, np.ndarray] = {}
        self.table_w: np.ndarray | None = None

    def fit(self, doc_texts: list[str]) -> None:
        ids = self.token_ids(doc_texts)
        n_vocab = len(self.table)
        df, freq = np.zeros(n_vocab), np.zeros(n_vocab)
        for row in ids:
            u, c = np.unique(np.asarray(row, dtype=np.int64), return_counts=True)
            df[u] += 1
            freq[u] += c
        idf = np.log((len(doc_texts) + 1) / (df + 1)) + 1e-3
        used = np.flatnonzero(freq)
        p = freq[used] / freq[used].sum()
        rows = self.table[used].astype(np.float64)
        mean = p @ rows
        cov = (rows - mean).T @ ((rows - mean) * p[:, None])
        eigval, eigvec = np.linalg.eigh(cov)
        order = np.argsort(eigval)[::-1]
        eigval, eigvec = eigval[order], eigvec[:, order]
        matrix = eigvec / np.sqrt(eigval + self.shrink * eigval.mean())
        avgdl = np.mean([len(r) for r in ids]) if ids else 1.0
        self.set_state(
            {
                "idf": idf.astype(np.float32),
                "mean": mean.astype(np.float32),
                "matrix": matrix.astype(np.float32),
                "avgdl": np.array(avgdl, np.float32),
            }
        )

    def get_state(self) -> dict[str, np.ndarray]:
        return dict(self.state)

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self.state = {k: np.asarray(v) for k, v in state.items()}
        self.idf = self.state["idf"]
        self.table_w = ((self.table - self.state["mean"]) @ self.state["matrix"]).astype(np.float32)

    def encode(self, texts, kind="query", progress=None) -> np.ndarray:
        if self.table_w is None:
            raise RagError(
                f"encoder {self.name} needs corpus statistics; fit it on the documents first (embed_corpus does)"
            )
        avgdl = float(self.state["avgdl"])
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, row in enumerate(self.token_ids(texts)):
            if row:
                u, c = np.unique(np.asarray(row, dtype=np.int64), return_counts=True)
                tf = c.astype(np.float32)
                if kind == "document":
                    tf = tf * (self.k1 + 1) / (tf + self.k1 * (1 - self.b + self.b * len(row) / avgdl))
                w = tf * self.idf[u]
                out[i] = (w @ self.table_w[u]) / max(float(w.sum()), 1e-9)
            if progress and (i % 500 == 0 or i == len(texts) - 1):
                progress(i + 1, len(texts))
        return out


# ---------------------------------------------------------------- loaders (one per registry entry)


def load_smollm2_table_encoder(name: str) -> TableEncoder:
    """smollm2-input, smollm2-input-mean or smollm2-input-wbm25."""
    from rag.encoders.smollm2 import load_input_table

    tokenizer, table = load_input_table()
    if name.endswith("-wbm25"):
        return WhitenedBM25TableEncoder(name, tokenizer, table)
    return TableEncoder(name, tokenizer, table, pooling="mean" if name.endswith("-mean") else "idf")


class BPEIds:
    """Adapter: a `tokenizers.Tokenizer` with the encode(text, add_special_tokens=False) -> ids call TableEncoder uses."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids


def lm_checkpoint_files(run: Path) -> tuple[Path, Path]:
    """(weights, tokenizer) of a `rag lm train --out` folder: the final weights, else the newest checkpoint."""
    candidates = [run / "model.safetensors", run / "ckpt" / "model.safetensors", run / "ckpt.old" / "model.safetensors"]
    weights = next((p for p in candidates if p.exists()), candidates[0])
    return weights, run / "tokenizer.json"


def load_lm_table_encoder(name: str) -> TableEncoder:
    """Encoder for 'lm:<checkpoint dir>[#idf]'."""
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    if not name.startswith("lm:"):
        raise RagError(f"encoder name {name!r} must look like lm:<checkpoint dir> (a rag lm train --out folder)")
    spec = name[3:]
    pooling = "idf" if spec.endswith("#idf") else "mean"
    run = Path(spec.removesuffix("#idf")).expanduser()
    weights, tok_path = lm_checkpoint_files(run)
    if not weights.exists() or not tok_path.exists():
        raise RagError(
            f"{run} is not an LM checkpoint (need tokenizer.json and ckpt/model.safetensors); "
            "train one with: rag lm train --out DIR"
        )
    try:
        tensors = load_file(str(weights))
        tokenizer = Tokenizer.from_file(str(tok_path))
    except Exception as e:  # safetensors and tokenizers raise their own error types
        raise RagError(
            f"cannot read the LM checkpoint {weights} ({e}); retrain it with: rag lm train --out {run}"
        ) from e
    if "wte.weight" not in tensors:
        raise RagError(f"{weights} has no input table 'wte.weight'; retrain it with: rag lm train --out {run}")
    return TableEncoder(name, BPEIds(tokenizer), tensors["wte.weight"].astype(np.float32), pooling=pooling)
