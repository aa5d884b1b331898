"""What every encoder shares: the interface, L2 normalisation and the text of a document.

One interface: `encode(texts, kind="query"|"document", progress=None) -> float32 [n, dim]`, plus `.name` and `.dim`.
Encoders that need corpus statistics (IDF weights) also have `fit(doc_texts)`, `get_state()` and `set_state()`;
that state is cached with the embeddings and saved beside each index, so queries are encoded the same way.
"""

from __future__ import annotations

from typing import Callable, Protocol

import numpy as np

ProgressFn = Callable[[int, int], None]  # progress(done, total)


class Encoder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str], kind: str = "query", progress: ProgressFn | None = None) -> np.ndarray: ...


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


def encode_sorted(items: list, order, run, dim: int, batch_size: int, progress: ProgressFn | None = None) -> np.ndarray:
    """run(batch) over batches of items taken in `order` (similar lengths together: little padding), returned as
    float32 [len(items), dim] rows in the input order."""
    out = np.zeros((len(items), dim), np.float32)
    for start in range(0, len(items), batch_size):
        rows = order[start : start + batch_size]
        out[rows] = run([items[i] for i in rows])
        if progress:
            progress(min(start + batch_size, len(items)), len(items))
    return out


def document_text(passage) -> str:
    """What a document encoder reads: the title line, then the text."""
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text
