"""rag.answer.abstain: the packaged answerability model (real MiniLM, real reader) and the agent's abstention."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest

from rag.agent import run_agent
from rag.agent.settings import AgentSettings
from rag.answer import abstain
from rag.answer.abstain import FEATURES, WEIGHTS, WEIGHTS_INFO, Abstainer, evidence_features
from rag.answer.reader import default_reader
from rag.encoders import minilm_query_encoder
from rag.retrieve import RetrievalSettings


def test_the_packaged_weights_match_their_card():
    card = json.loads(WEIGHTS_INFO.read_text())
    assert card["sha256"] == hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()
    assert card["columns"] == list(FEATURES) and 0 < card["threshold"] < 1
    assert card["command"].startswith("rag train abstain")


def test_a_passage_that_answers_scores_above_one_on_another_subject():
    question = "What does the Eurasian lynx mostly hunt?"
    answering = ["The Eurasian lynx mostly hunts hares and roe deer in the forests of Europe."]
    unrelated = ["Run pip install lynxtool to install the command-line tool; it needs Python 3.11."]
    reader, encode, model = default_reader(), minilm_query_encoder().encode, Abstainer()
    p_yes = model.probability(question, answering, reader.read(question, answering), encode)
    p_no = model.probability(question, unrelated, reader.read(question, unrelated), encode)
    assert 0.0 <= p_no < p_yes <= 1.0
    x = evidence_features(question, answering, [], encode)  # no span: the reader features take their floor
    assert x.shape == (len(FEATURES),) and np.isfinite(x).all()


@pytest.fixture
def always_abstains(monkeypatch):
    model = Abstainer()
    model.threshold = 1.01  # every probability is below it
    monkeypatch.setattr("rag.agent.graph.default_abstainer", lambda: model)
    return model


def test_below_the_threshold_the_agent_says_the_documents_do_not_say(always_abstains):
    settings = RetrievalSettings(corpus="builtin", retriever="dense")
    result = run_agent("What is BM25?", settings, AgentSettings())
    assert result["abstained"] is True and result["citations"] == []
    assert result["answer"].startswith("The documents do not say.")
    answer_step = next(s for s in result["steps"] if s["node"] == "answer")
    assert answer_step["backend"] == "abstain" and 0.0 <= answer_step["answerable"] <= 1.0
    off = run_agent("What is BM25?", settings, replace(AgentSettings(), use_abstain=False))
    assert off["abstained"] is False and off["citations"]


def test_without_weights_the_agent_never_abstains_on_evidence(monkeypatch, tmp_path):
    monkeypatch.setattr(abstain, "WEIGHTS", tmp_path / "missing.npz")
    abstain.default_abstainer.cache_clear()
    try:
        assert abstain.default_abstainer() is None
    finally:
        abstain.default_abstainer.cache_clear()
