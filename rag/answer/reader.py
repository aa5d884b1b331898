"""The learned reader: a span-extraction head on the packaged MiniLM, run through ONNX Runtime (torch-free).

- `ReaderFeatures` turns (question, passage) into windows of at most MAX_TOKENS tokens: [CLS] question [SEP]
  passage slice [SEP], overlapping by STRIDE tokens, with each passage token's character offsets. Training
  (rag.training.reader_fit) and query time use this same function, so the two never disagree on a window.
- The trained weights (rag/models/reader_weights.npz, low-rank adapters over the packaged MiniLM plus the span
  head; `rag train reader` re-trains them) are merged into MiniLM and exported once to ONNX in RAG_CACHE_DIR,
  with a sha256 beside it, like rag.encoders.onnx does for the query encoder (an int8 variant is quantized from
  it when asked for: INT8). Only that export imports torch.
- `Reader.read(question, passages)` returns every passage's best span, scored (start logit + end logit), and
  the null score ([CLS]: "the answer is not in this window"). A span whose score does not beat its window's
  null score by NULL_MARGIN is no answer: the agent then says "not found in the passages".
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.config import built_once
from rag.models import minilm_tokenizer, model_file

MAX_TOKENS = 256  # tokens per window, question and special tokens included
MAX_QUESTION_TOKENS = 64
STRIDE = 96  # tokens two neighbouring windows share, so that a span near a window's edge is whole in the next
MAX_SPAN_TOKENS = 30  # the longest answer span the reader returns
NULL_MARGIN = 0.0  # a span must beat its window's [CLS] score by this much to count as an answer
WEIGHTS = model_file("reader_weights.npz")
WEIGHTS_INFO = model_file("reader_weights.json")  # sha256, training command and figures
CLS, SEP = 101, 102
# Query time runs one window a run, in fp32. Measured by scripts/reader_speed.py (docs/agent/answers/reader_speed.json):
# one window a run needs no padding and is faster than a padded batch in either precision; in fp32 a window's logits
# are the same to the bit either way (the int8 model quantizes a run's activations with one scale, so there a
# window's logits would depend on the windows run beside it). The int8 model is faster again, but on the
# documentation benchmark it cost one key fact in each folder for an ask/search ratio 0.4-0.55 lower
# (docs_reader_int8.results.json), so it is not the default.
INT8 = False


@dataclass
class Window:
    """One model input: ids, token types, and for each passage token its (start, end) characters in the passage."""

    input_ids: list[int]
    token_type_ids: list[int]
    offsets: list[tuple[int, int] | None]  # None for the question and special tokens
    passage: int  # index of the passage this window reads


def featurize(tok, question: str, texts: list[str], max_tokens: int = MAX_TOKENS, stride: int = STRIDE):
    """Windows over each text for one question (see the module doc)."""
    q_ids = tok.encode(question, add_special_tokens=False).ids[:MAX_QUESTION_TOKENS]
    room = max_tokens - len(q_ids) - 3
    windows = []
    for i, enc in enumerate(tok.encode_batch(texts, add_special_tokens=False)):
        ids, offs = enc.ids, enc.offsets
        start = 0
        while True:
            piece = slice(start, start + room)
            input_ids = [CLS, *q_ids, SEP, *ids[piece], SEP]
            types = [0] * (len(q_ids) + 2) + [1] * (len(ids[piece]) + 1)
            offsets = [None] * (len(q_ids) + 2) + [tuple(o) for o in offs[piece]] + [None]
            windows.append(Window(input_ids, types, offsets, i))
            if start + room >= len(ids):
                break
            start += room - stride
    return windows


def pad_batch(windows: list[Window]) -> dict[str, np.ndarray]:
    width = max(len(w.input_ids) for w in windows)
    ids = np.zeros((len(windows), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for r, w in enumerate(windows):
        n = len(w.input_ids)
        ids[r, :n], types[r, :n], mask[r, :n] = w.input_ids, w.token_type_ids, 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def best_span(start: np.ndarray, end: np.ndarray, offsets, max_span: int = MAX_SPAN_TOKENS):
    """(score, first token, last token) of the best span over passage tokens, or None when the window has none."""
    idx = [i for i, o in enumerate(offsets) if o is not None]
    if not idx:
        return None
    lo, hi = idx[0], idx[-1]
    s, e = start[lo : hi + 1], end[lo : hi + 1]
    n = len(s)
    scores = s[:, None] + e[None, :]
    band = np.triu(np.ones((n, n), dtype=bool)) & ~np.triu(np.ones((n, n), dtype=bool), k=max_span)
    scores = np.where(band, scores, -np.inf)
    flat = int(np.argmax(scores))
    a, b = divmod(flat, n)
    return float(scores[a, b]), lo + a, lo + b


@dataclass
class Span:
    """The reader's answer in one passage: the text, its characters in the passage, and how sure it is."""

    passage: int  # index into the passages given to read()
    text: str
    start: int  # characters in the passage text
    end: int
    score: float  # start + end logit
    null: float  # the window's [CLS] score
    window: int = 0

    @property
    def margin(self) -> float:
        return self.score - self.null


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """The span without surrounding punctuation and spaces (a reader often takes the comma after a name)."""
    while start < end and text[start] in " ,;:.()[]\"'\n\t":
        start += 1
    while (
        end > start
        and text[end - 1] in " ,;:([]\"'\n\t"
        or (end > start and text[end - 1] == "." and end - 1 > start and not text[end - 2].isupper())
    ):
        end -= 1
    return start, end


def reader_onnx_file(weights: Path = WEIGHTS) -> Path:
    """RAG_CACHE_DIR/onnx/reader-<sha of the weights>/model.onnx: new weights, a new export."""
    from rag.models.onnx_sessions import onnx_file

    return onnx_file("reader", weights, "rag train reader")


def load_session(weights: Path = WEIGHTS, threads: int | None = None, int8: bool = INT8):
    """An ONNX Runtime session for the reader, exporting it first when the cache lacks it (or fails its sha256);
    int8: the dynamically quantized model (see INT8)."""
    from rag.models.onnx_sessions import load_session as cached_session

    def export(source: Path, target: Path) -> None:
        from rag.answer.reader_model import export_reader

        export_reader(source, target)

    return cached_session("reader", weights, export, "rag train reader", threads, int8=int8)


LOGITS_CACHE = 256  # windows whose logits a Reader keeps (under 5 MB with their keys)


class Reader:
    """Reads passages for a question and returns the best span in each (see the module doc)."""

    def __init__(self, weights: Path = WEIGHTS, threads: int | None = None, int8: bool = INT8):
        self.tok = minilm_tokenizer()
        self.session = load_session(weights, threads, int8)
        self.cache: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()  # the agent's grade and answer
        self.lock = threading.Lock()  # steps read the same (question, passage) windows: the second read is a lookup

    def logits(self, windows: list[Window]) -> list[tuple[np.ndarray, np.ndarray]]:
        """(start, end) logits per window; the last LOGITS_CACHE windows' logits are kept, keyed by their ids."""
        keys = [(tuple(w.input_ids), tuple(w.token_type_ids)) for w in windows]
        with self.lock:
            res = {i: self.cache[k] for i, k in enumerate(keys) if k in self.cache}
        todo = [i for i in range(len(windows)) if i not in res]
        for i in todo:  # one window a run (see INT8)
            start, end = self.session.run(None, pad_batch([windows[i]]))
            res[i] = (start[0], end[0])
        with self.lock:
            for i in todo:
                self.cache[keys[i]] = res[i]
            while len(self.cache) > LOGITS_CACHE:
                self.cache.popitem(last=False)
        return [res[i] for i in range(len(windows))]

    def read(self, question: str, texts: list[str]) -> list[Span]:
        """The best span of each passage that has one, best first (by score minus null score)."""
        texts = [t if isinstance(t, str) else "" for t in texts]
        live = [i for i, t in enumerate(texts) if t.strip()]
        if not live or not question.strip():
            return []
        windows = featurize(self.tok, question, [texts[i] for i in live])
        best: dict[int, Span] = {}
        for w_i, (w, (s, e)) in enumerate(zip(windows, self.logits(windows))):
            found = best_span(s, e, w.offsets)
            if found is None:
                continue
            score, a, b = found
            p = live[w.passage]
            c0, c1 = trim(texts[p], w.offsets[a][0], w.offsets[b][1])
            if c1 <= c0:
                continue
            span = Span(p, texts[p][c0:c1], c0, c1, score, float(s[0] + e[0]), w_i)
            if p not in best or span.margin > best[p].margin:
                best[p] = span
        return sorted(best.values(), key=lambda sp: -sp.margin)


def get_reader(weights: Path = WEIGHTS) -> Reader:
    """One Reader per weights file per process."""
    return reader_for(str(weights))


@built_once(maxsize=None)
def reader_for(weights: str) -> Reader:
    return Reader(Path(weights))


def reader_available(weights: Path = WEIGHTS) -> bool:
    """Whether the trained weights ship here and ONNX Runtime is installed."""
    import importlib.util

    return weights.exists() and importlib.util.find_spec("onnxruntime") is not None


def weights_path() -> Path:
    """The committed weights, or RAG_READER_WEIGHTS (a file `rag train reader --out` wrote) where it is set."""
    return Path(os.environ["RAG_READER_WEIGHTS"]) if os.environ.get("RAG_READER_WEIGHTS") else WEIGHTS


def default_reader() -> Reader | None:
    """The shared Reader over weights_path(), or None where the weights or ONNX Runtime are missing."""
    path = weights_path()
    return get_reader(path) if reader_available(path) else None


def training_info() -> dict:
    return json.loads(WEIGHTS_INFO.read_text()) if WEIGHTS_INFO.exists() else {}


def sentence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """(first, last) characters of the sentence(s) that hold text[start:end]."""
    left = max((m.end() for m in re.finditer(r"[.!?]\s+(?=[A-Z0-9\"'(])|\n\s*\n", text[:start])), default=0)
    m = re.search(r"[.!?](?=\s|$)|\n\s*\n", text[end:])
    right = end + m.end() if m else len(text)
    return left, right
