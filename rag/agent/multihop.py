"""Does a question need a second retrieval hop? A learned decision (the idea of Adaptive-RAG, Jeong et al. 2024:
a small classifier trained on single-hop vs multi-hop questions routes each question to one or more rounds).

The planner (rag.agent.planner) proposes a second hop from the question's shape: a relative clause ("the woman
who portrayed ..."), an "of" chain, two entities compared, or a long question naming an entity. That shape is
common in single-hop questions too (the planner proposes a hop for 70 % of 300 SQuAD questions). This model
decides: a logistic regression over the question's MiniLM embedding (the query encoder the retriever already
runs) and a few structural features (below), trained by `rag train hop` (rag.training.multihop_fit) on HotpotQA
development questions (multi-hop by construction) against SQuAD questions of the reader's training articles
(single-hop).

`MultiHopModel.probability(question)` is the probability that the question is multi-hop; the agent hops when it
reaches the threshold that training chose (AgentSettings.hop_threshold overrides it). The weights are a few
hundred floats (rag/models/multihop_weights.npz, sha256 and figures in the JSON beside it); the query path stays
torch-free.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from rag.agent.planner import plan_question
from rag.config import built_once
from rag.encoders import minilm_query_encoder
from rag.lexicon import content_words, entities
from rag.models import model_file

WEIGHTS = model_file("multihop_weights.npz")
WEIGHTS_INFO = model_file("multihop_weights.json")  # sha256, threshold, command and figures
RETRAIN = "rag train hop"
ENCODER = "minilm"  # the question embedding: MiniLM through its query backend, as rag.retrieve runs queries
HOP_REASONS = ("bridge", "chain", "long", "comparison")  # the planner's reasons for a second hop
FEATURES = (
    "log words",
    "log content words",
    "entities",
    "capitalised share",
    "has a digit",
    "has ' or '",
    *(f"planned: {r}" for r in HOP_REASONS),
)


def question_features(question: str) -> np.ndarray:
    """The structural features (FEATURES, in order) of one question."""
    tokens = question.split()
    reason = plan_question(question)["hop_reason"]
    values = [
        math.log1p(len(tokens)),
        math.log1p(len(content_words(question))),
        len(entities(question)),
        sum(t[:1].isupper() for t in tokens[1:]) / max(1, len(tokens)),
        bool(re.search(r"\d", question)),
        bool(re.search(r"\bor\b", question, re.IGNORECASE)),
        *(reason == r for r in HOP_REASONS),
    ]
    return np.asarray(values, dtype=np.float32)


def design_matrix(questions: list[str], encoder) -> np.ndarray:
    """[MiniLM embedding | structural features] for each question: the model's inputs (training and query time)."""
    embedded = np.asarray(encoder.encode(list(questions)), dtype=np.float32)
    return np.hstack([embedded, np.stack([question_features(q) for q in questions])])


class MultiHopModel:
    """The trained logistic regression: weights over design_matrix's columns, a bias and the chosen threshold."""

    def __init__(self, weights: Path = WEIGHTS, info: Path = WEIGHTS_INFO):
        with np.load(weights) as data:
            self.coef = data["coef"].astype(np.float64)
            self.bias = float(data["bias"])
        self.threshold = float(json.loads(info.read_text())["threshold"]) if info.exists() else 0.5
        self.encoder = minilm_query_encoder()

    def probabilities(self, questions: list[str]) -> np.ndarray:
        logits = design_matrix(questions, self.encoder).astype(np.float64) @ self.coef + self.bias
        return 1 / (1 + np.exp(-logits))

    def probability(self, question: str) -> float:
        return float(self.probabilities([question])[0])


@built_once()
def default_model() -> MultiHopModel | None:
    """The shared model over the committed weights, or None where they are missing (then every planned hop runs)."""
    return MultiHopModel() if WEIGHTS.exists() else None


def effective_threshold(override: float | None = None) -> float | None:
    """The probability a planned hop must reach: override (AgentSettings.hop_threshold) or the one `rag train hop`
    chose; None without the model's weights (then every planned hop runs)."""
    model = default_model()
    return override if override is not None else (model.threshold if model else None)
