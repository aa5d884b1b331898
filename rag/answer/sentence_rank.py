"""A learned answer-sentence ranker: which sentence of the passages states the answer?

The typed rules (rag.answer.sentence_pick, rag.answer.comparison, rag.answer.reading) each choose a sentence for one
question shape. On question sets written by someone who had not seen them they put the key fact in the answer for
about half the questions (45 of 80), though the gold passage was among the first ten for 79 of the 80: each rule reads the
phrasings it was written from. This model looks at every sentence of the passages the answer is written from and
scores it with a logistic regression over features that name no phrasing:
- how close it is to the question: MiniLM's cosine (and its gap to the best sentence), IDF-weighted
  word overlap, the share of the question's words it holds, in it or only in its passage's title;
- where it sits: its passage's rank, first sentence or not, its position and length;
- what the learned reader found: whether its passage's best span lies in it, and that span's margin;
- cue words matched to the question's kind: figures for how much / how many, a negation for yes/no, a comparative
  for a comparison, a definition's "is a" for "What is X?", causal words for why, an equation for relations,
  commands for how-to;
- what the rules chose: whether the sentence is in the rules' answer, and first in it.

`rank(question, passages, answer, reader)` gives (probability, sentence, passage) best first. The answer step
(rag.answer.llm.ExtractiveBackend) adds to a long answer the best sentences that the rules' answer does not hold,
at most MOST_ADDED of them, each when its probability reaches the weights' threshold (with_best_sentence), after
the sentence before it when it reads only with that one (in_context): the rules' sentence still leads, and the
ranked ones back it up. Measured by cross-validation over the development
sets (each set held out in turn, see
rag.training.sentence_rank_fit), the ranker's first sentence alone holds the key fact less often than the rules'
answer, and adding it to the rules' answer holds it more often than either. The weights are a few dozen floats
(sentence_rank_weights.npz; sha256, training figures and the command that re-trains them in the JSON beside it),
fitted by `rag train sentences` (rag.training.sentence_rank_fit) on the built-in question sets used for development.
The cosine is always MiniLM's (its torch-free query backend, as rag.agent.multihop uses it), whatever encoder the
retriever searches with: the weights were fitted on MiniLM's cosines. Sentence vectors are cached (CACHE_SENTENCES)
since the same passages come back for many questions.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.answer.comparison import sides
from rag.answer.reading import READ_PASSAGES, definition_target, is_how_to, readable
from rag.answer.sentence_pick import kind, needs_sentence_before
from rag.config import built_once
from rag.lexicon import content_words, sentences, stem, strip_citations, words
from rag.models import model_file

WEIGHTS = model_file("sentence_rank_weights.npz")
WEIGHTS_INFO = model_file("sentence_rank_weights.json")
RETRAIN = "rag train sentences"
MOST_ADDED = 2  # ranked sentences a long answer may gain (before the reserve: 1 -> 407 of 468, 2 -> 414)
CACHE_SENTENCES = 8192  # sentence vectors kept (384 floats each: about 12 MB)

_QUANTITY = re.compile(
    r"\bhow\s+(?:many|much|big|large|small|long|fast|slow|far|often)\b|\bwhat\s+(?:is|was|are)\s+the\s+"
    r"(?:value|number|size|score|ratio|cost|count|total|share|rate|percentage)\b|\bby\s+how\s+much\b"
    r"|\b(?:compute|calculate|work\s+out)\b",
    re.I,
)
_FIGURE = re.compile(r"(?<![A-Za-z])\d")
_NEGATION = re.compile(
    r"\b(?:no|not|never|none|cannot|without|neither|nor|undefined|unsupported|impossible)\b|n['’]t\b", re.I
)
_COMPARATIVE = re.compile(
    r"\bthan\b|\bwhereas\b|\bwhile\b|\bunlike\b|\binstead\b|\bversus\b|\bvs\b|\b(?:more|less|fewer|better|worse|"
    r"faster|slower|smaller|larger|higher|lower|cheaper)\b|\b\w{3,}er\b",
    re.I,
)
_DEFINES = re.compile(r"\b(?:is|are)\s+(?:a|an|the)\b|\brefers?\s+to\b|\bmeans?\b|\bcalled\b|\bdefined\s+as\b", re.I)
_CAUSAL = re.compile(r"\bbecause\b|\bso\s+that\b|\btherefore\b|\bwhich\s+is\s+why\b|\bsince\b|\bthus\b|\bhence\b", re.I)
_EQUATION = re.compile(r"\S\s*[=≈∝]\s*\S|[·×√Σ]")
_COMMAND = re.compile(
    r"`|^\s*(?:use|run|set|call|pass|add|compute|divide|multiply|subtract|take|fit|train|pick|choose|start|"
    r"normali[sz]e|apply|remove|project|keep)\b|\bto\s+\w+\s*,|\bstep\b|\bfirst\b",
    re.I,
)
_REFERS_BACK = re.compile(r"^(?:it|this|these|they|such|that|those|its|their)\b", re.I)

FEATURES = (
    "cosine",
    "cosine gap to the best",
    "overlap / best overlap",
    "question words held",
    "question words in the title only",
    "1 / (1 + passage rank)",
    "first sentence",
    "log position",
    "log words",
    "has a figure",
    "quantity question x figure",
    "yes/no x negation",
    "relation x equation",
    "definition x defines",
    "definition x names the term",
    "comparison x comparative",
    "comparison x names both sides",
    "why x causal",
    "how-to x command",
    "equation",
    "refers back",
    "ends with a colon",
    "holds its passage's reader span",
    "reader span margin / 10",
    "holds the best reader span",
    "in the rules' answer",
    "first in the rules' answer",
    "dropped by the grader",
)


@dataclass
class Candidate:
    passage: dict
    rank: int  # the passage's place among those read
    index: int  # the sentence's place in its passage
    text: str


def candidates(passages: list[dict], limit: int = READ_PASSAGES, reserve: list[dict] | None = None) -> list[Candidate]:
    """Every sentence of the first `limit` readable passages, then of the reserve (passages the grader dropped,
    ranked after them); the agent screens passages before they reach here."""
    out = []
    for rank, p in enumerate(readable(passages)[:limit] + readable(reserve or [])):
        for i, sent in enumerate(sentences(p["text"])):
            out.append(Candidate(p, rank, i, sent))
    return out


def _flat(text: str) -> str:
    return " ".join(strip_citations(text).split())


def _reader_marks(reader, question: str, cands: list[Candidate]) -> tuple[dict[int, float], int | None]:
    """({candidate index: margin of its passage's best span, for the sentence holding it}, the candidate holding
    the best span of all)."""
    if reader is None or not cands:
        return {}, None
    ps = list({id(c.passage): c.passage for c in cands}.values())
    marks: dict[int, float] = {}
    best = None
    for sp in reader.read(question, [p["text"] for p in ps]):
        text = ps[sp.passage]["text"]
        for j, c in enumerate(cands):
            if c.passage is ps[sp.passage]:
                at = text.find(c.text)
                if at >= 0 and at <= sp.start < at + len(c.text):
                    marks[j] = sp.margin
                    if best is None or sp.margin > marks[best]:
                        best = j
                    break
    return marks, best


def features(question: str, cands: list[Candidate], cosines: np.ndarray, answer: str, reader=None) -> np.ndarray:
    """The design matrix (len(cands) x len(FEATURES)); see the module doc."""
    q = list(dict.fromkeys(stem(w) for w in content_words(question)))
    sent_stems = [{stem(w) for w in words(c.text)} for c in cands]
    df = Counter(w for s in sent_stems for w in s if w in q)
    idf = [sum(math.log(1 + len(cands) / df[w]) for w in q if w in s) for s in sent_stems]
    best_idf = max(idf, default=0.0) or 1.0
    question_kind = kind(question)
    quantity = bool(_QUANTITY.search(question))
    compared = sides(question)
    target = definition_target(question)
    target_stems = {stem(w) for w in words(target or "")}
    how_to = is_how_to(question)
    marks, best_span = _reader_marks(reader, question, cands)
    flat_answer = _flat(answer)
    first_answer = _flat(re.split(r"(?<=\])\s+", answer.strip(), maxsplit=1)[0]) if answer.strip() else ""
    top_cos = float(cosines.max()) if len(cosines) else 0.0
    rows = []
    for j, c in enumerate(cands):
        s, flat = sent_stems[j], " ".join(c.text.split())
        title = {stem(w) for w in words(str(c.passage.get("title") or ""))}
        held = sum(w in s for w in q) / max(1, len(q))
        title_only = sum(w in title and w not in s for w in q) / max(1, len(q))
        figure = bool(_FIGURE.search(c.text))
        both = bool(compared) and all(any(w in s or w in title for w in side) for side in compared[:2])
        rows.append(
            [
                float(cosines[j]),
                float(cosines[j]) - top_cos,
                idf[j] / best_idf,
                held,
                title_only,
                1.0 / (1 + c.rank),
                float(c.index == 0),
                math.log1p(c.index),
                math.log1p(len(words(c.text))),
                float(figure),
                float(quantity and figure),
                float(question_kind == "yes/no" and bool(_NEGATION.search(c.text))),
                float(question_kind == "relation" and bool(_EQUATION.search(c.text))),
                float(bool(target) and bool(_DEFINES.search(c.text))),
                float(bool(target_stems) and target_stems <= s),
                float(bool(compared) and bool(_COMPARATIVE.search(c.text))),
                float(both),
                float(question_kind == "why" and bool(_CAUSAL.search(c.text))),
                float(how_to and bool(_COMMAND.search(c.text))),
                float(bool(_EQUATION.search(c.text))),
                float(bool(_REFERS_BACK.match(c.text))),
                float(c.text.rstrip().endswith(":")),
                float(j in marks),
                max(-1.0, min(1.0, marks.get(j, 0.0) / 10.0)),
                float(j == best_span),
                float(bool(flat) and flat in flat_answer),
                float(bool(flat) and flat in first_answer),
                float(bool(c.passage.get("reserve"))),
            ]
        )
    return np.asarray(rows, dtype=np.float32).reshape(len(cands), len(FEATURES))


class VectorCache:
    """MiniLM vectors of the texts asked for, each encoded alone (so the same for every caller), the last
    CACHE_SENTENCES of them kept; safe across threads."""

    def __init__(self, size: int = CACHE_SENTENCES):
        self.size = size
        self.vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        from rag.encoders import minilm_query_encoder

        with self.lock:  # what is cached now is kept for this call, whatever another thread evicts meanwhile
            have = {t: self.vectors[t] for t in dict.fromkeys(texts) if t in self.vectors}
            for t in have:
                self.vectors.move_to_end(t)
        need = [t for t in dict.fromkeys(texts) if t not in have]
        if need:
            # one text a call: the int8 query model quantizes a call's activations with one scale, so a text encoded
            # in a batch gets a vector that depends on the rest of the batch (cosine 0.98-0.99 to its own), and a
            # cached sentence would depend on which question first asked for it; alone it is the same every time,
            # and on this CPU no slower than a padded batch
            encoder = minilm_query_encoder()
            have.update((t, np.asarray(encoder.encode([t]), dtype=np.float32)[0]) for t in need)
            with self.lock:
                for t in need:
                    self.vectors[t] = have[t]
                while len(self.vectors) > self.size:
                    self.vectors.popitem(last=False)
        return np.stack([have[t] for t in texts])


sentence_vectors = VectorCache()


def cosines_to(question: str, cands: list[Candidate]) -> np.ndarray:
    """MiniLM's cosine of each candidate to the question."""
    if not cands:
        return np.zeros(0, dtype=np.float32)
    vecs = sentence_vectors([question] + [c.text for c in cands])
    return vecs[1:] @ vecs[0]


@dataclass(frozen=True)
class Model:
    coef: np.ndarray
    bias: float
    threshold: float

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(x @ self.coef + self.bias)))


@built_once()
def load_model(path: Path = WEIGHTS) -> Model | None:
    """The trained ranker, or None when its weights are absent (the rules' answer then stands)."""
    if not path.exists():
        return None
    with np.load(path) as z:
        coef, bias = z["coef"].astype(np.float32), float(z["bias"])
    if coef.shape != (len(FEATURES),):
        return None  # weights of another feature set: re-train with RETRAIN
    info = json.loads(WEIGHTS_INFO.read_text()) if path == WEIGHTS and WEIGHTS_INFO.exists() else {}
    return Model(coef, bias, float(info.get("threshold", 0.5)))


def rank(question: str, passages: list[dict], answer: str, reader=None, model: Model | None = None, reserve=None):
    """[(probability, sentence, passage)] best first, or [] without a model or sentences."""
    model = model or load_model()
    cands = candidates(passages, reserve=reserve)
    if model is None or not cands:
        return []
    x = features(question, cands, cosines_to(question, cands), answer, reader)
    probs = model.probabilities(x)
    order = np.argsort(-probs, kind="stable")
    return [(float(probs[j]), cands[j].text, cands[j].passage) for j in order]


def with_best_sentence(question: str, passages: list[dict], answer: str, reader=None, reserve=None) -> str:
    """The long answer followed by the ranker's best sentences that it does not hold yet (add_best_missing);
    else the answer unchanged."""
    model = load_model()
    if model is None:
        return answer
    return add_best_missing(answer, rank(question, passages, answer, reader, model, reserve), model.threshold)


def add_best_missing(answer: str, ranked, threshold: float, most: int = MOST_ADDED) -> str:
    """answer + the first `most` of ranked [(probability, sentence, passage)] that it does not hold, each with its
    [n], while their probability reaches threshold (ranked is best first): every sentence more likely than not to
    hold the answer, up to `most`."""
    added = 0
    for prob, sent, p in ranked:
        if prob < threshold or added >= most:
            break
        if " ".join(sent.split()) not in _flat(answer):
            answer = f"{answer} {in_context(sent, p, answer)} [{p['n']}]".strip()
            added += 1
    return answer


def in_context(sent: str, passage: dict, answer: str) -> str:
    """The sentence, after the one before it in its passage when it reads only with that one
    (rag.answer.sentence_pick.needs_sentence_before) and the answer does not hold it yet."""
    sents = sentences(str(passage.get("text", "")))
    i = sents.index(sent) if sent in sents else 0
    if i > 0 and needs_sentence_before(sent, sents[i - 1]) and " ".join(sents[i - 1].split()) not in _flat(answer):
        return f"{sents[i - 1]} {sent}"
    return sent
