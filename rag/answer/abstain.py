"""Do the passages answer the question? A learned decision, so that the agent can say "the documents do not say".

A logistic regression over a few evidence features of (question, the passages the answer step reads):
- the reader's best span: its margin over the window's "no answer" score, its score, and that null score;
- how close the passages are to the question: the best and the mean of the top three MiniLM cosines, and the cosine
  of the sentence that holds the best span;
- how much of the question the best passage covers: the share of the question's content words (stemmed) in it.

`rag train abstain` (rag.training.abstain_fit) fits it on SQuAD questions of the reader's training articles and the
HotpotQA development questions, each paired with the passages retrieval returns for it (answerable: they hold the
gold answer), with the passages retrieval returns once every passage that holds the answer is removed (not
answerable: the documents are about it but do not say), and, for SQuAD, with the passages of other articles only
(not answerable: the documents never cover it). The threshold is chosen on documentation, the built-in corpus's
development question sets read the first two ways: the highest at which at most MAX_FALSE_ABSTAIN of their
answerable examples would abstain, or the lowest of the grid when none keeps to it (the packaged 0.05: 3.5 % of
answerable and 24 % of unanswerable examples abstain).
No evaluated question and no folder of the documentation benchmark is in its data.

`Abstainer.probability(question, passages, spans)` is the probability that the passages answer the question; the
agent abstains below the trained threshold. The weights are a dozen floats (rag/models/abstain_weights.npz; sha256,
threshold, command and figures in the JSON beside it); the query path stays torch-free.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rag.answer.reader import sentence_around
from rag.config import built_once
from rag.lexicon import content_words, stem, words
from rag.models import model_file

WEIGHTS = model_file("abstain_weights.npz")
WEIGHTS_INFO = model_file("abstain_weights.json")
RETRAIN = "rag train abstain"
PASSAGES = 5  # the passages the features look at: the answer step's first READ_PASSAGES
FEATURES = (
    "best reader margin",
    "best span score",
    "null score of that window",
    "best cosine",
    "mean of the top-3 cosines",
    "cosine of the best span's sentence",
    "question words in the best passage",
)


def coverage(question: str, text: str) -> float:
    """Share of the question's content words whose stem occurs in text."""
    q = {stem(w) for w in content_words(question)}
    if not q:
        return 0.0
    return len(q & {stem(w) for w in words(text)}) / len(q)


def evidence_features(question: str, texts: list[str], spans: list, encode) -> np.ndarray:
    """FEATURES, in order, for a question and the passage texts the reader read (spans: reader.read's result over
    exactly these texts, best first). encode(list of texts) -> unit vectors (the MiniLM query encoder)."""
    texts = [t for t in texts[:PASSAGES]]
    vectors = np.asarray(encode([question, *texts]), dtype=np.float32)
    cosines = np.sort(vectors[1:] @ vectors[0])[::-1] if texts else np.zeros(1, dtype=np.float32)
    best = spans[0] if spans else None
    if best is not None:
        a, b = sentence_around(texts[best.passage], best.start, best.end)
        sentence = np.asarray(encode([texts[best.passage][a:b]]), dtype=np.float32)[0]
        span_values = [best.margin, best.score, best.null, float(sentence @ vectors[0])]
    else:
        span_values = [-20.0, -20.0, 0.0, 0.0]
    covered = max((coverage(question, t) for t in texts), default=0.0)
    values = [
        span_values[0],
        span_values[1],
        span_values[2],
        float(cosines[0]),
        float(cosines[:3].mean()),
        span_values[3],
        covered,
    ]
    return np.asarray(values, dtype=np.float32)


class Abstainer:
    """The trained logistic regression: standardised features, weights, a bias and the chosen threshold."""

    def __init__(self, weights: Path = WEIGHTS, info: Path = WEIGHTS_INFO):
        with np.load(weights) as data:
            self.mean = data["mean"].astype(np.float64)
            self.scale = data["scale"].astype(np.float64)
            self.coef = data["coef"].astype(np.float64)
            self.bias = float(data["bias"])
        self.threshold = float(json.loads(info.read_text())["threshold"]) if info.exists() else 0.5

    def probability_of(self, x: np.ndarray) -> float:
        z = float(((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.coef + self.bias)
        return float(1.0 / (1.0 + np.exp(-z)))

    def probability(self, question: str, texts: list[str], spans: list, encode) -> float:
        """The probability that these passages answer the question."""
        return self.probability_of(evidence_features(question, texts, spans, encode))

    def passages_probability(self, question: str, passages: list[dict], reader) -> float | None:
        """probability() for the answer step's passages (dicts with "text"), read by its reader and encoded by the
        MiniLM query encoder; None when none is readable."""
        from rag.answer.reading import readable
        from rag.encoders import minilm_query_encoder

        texts = [p["text"] for p in readable(passages)[:PASSAGES]]
        if not texts:
            return None
        spans = reader.read(question, texts)
        return round(self.probability(question, texts, spans, minilm_query_encoder().encode), 3)


def abstention_answer(passages: list[dict]) -> str:
    """The plain answer when the passages do not answer the question: it cites none of them as an answer."""
    title = next((str(p.get("title") or "").strip() for p in passages if str(p.get("title") or "").strip()), "")
    closest = f" The closest passage, '{title}', does not answer it." if title else ""
    return "The documents do not say." + closest


@built_once()
def default_abstainer() -> Abstainer | None:
    """The packaged model, or None when its weights are missing (the agent then never abstains on evidence)."""
    return Abstainer() if WEIGHTS.exists() else None
