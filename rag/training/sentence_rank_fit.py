"""`rag train sentences`: fit the learned answer-sentence ranker (rag.answer.sentence_rank) in a few minutes.

Data: the built-in question sets used for development (DEV_SETS; the later sets are held out for evaluation). The
agent answers each question as a user runs it, with the ranker off, and the answer step's inputs are kept: the
question, the passages it answers from, and the rules' answer. Every sentence of those passages is a candidate; it
is positive when it holds the question's key fact (rag.studies.answer_eval.contains_fact).

scikit-learn's LogisticRegression (balanced classes, C below) on rag.answer.sentence_rank.features. The figures are
cross-validated by set: each development set is scored by a model fitted on the others, so a set's phrasings never
teach the model that scores it. They are: the key fact in the rules' answer; in the ranker's first sentence alone;
and in the rules' answer with the ranker's best missing sentences added at the threshold (what the agent answers).
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rag.answer.llm import ExtractiveBackend
from rag.answer.sentence_rank import MOST_ADDED
from rag.config import EVALSETS_DIR, RagError

QUESTIONS = EVALSETS_DIR
DEV_SETS = (
    "seed_questions.jsonl",
    "builtin_heldout_questions.jsonl",
    "builtin_fresh_questions.jsonl",
    *(f"builtin_fresh{i}_questions.jsonl" for i in range(2, 14)),
)  # each set joined after it was measured once as held out; builtin_fresh14 and later are
#    held out for rag eval answers
C = 1.0  # inverse L2 strength (0.3, 1 and 3 gave the same cross-validated figures within one question)
THRESHOLD = 0.5  # the balanced model's even odds: a sentence as likely to hold the answer as not


@dataclass
class AnswerStep:
    """What the answer step saw for one question, and the key fact its answer should hold."""

    set: str
    question: str
    key_phrase: str
    passages: list[dict]
    answer: str
    reserve: list[dict] = field(default_factory=list)  # the passages the grader dropped (nodes.reserve_passages)


class _Recorder(ExtractiveBackend):
    """The extractive backend with the ranker off, keeping the answer step's inputs and the rules' answer."""

    def __init__(self, embed, reader):
        super().__init__(embed=embed, reader=reader, ranked_sentence=False)
        self.last: tuple[str, list[dict], str, list[dict]] | None = None

    def answer_spans(self, question, passages, sub_questions=None, short=False, reader=None, reserve=None, **more):
        text, spans = super().answer_spans(question, passages, sub_questions, short, reader, reserve, **more)
        self.last = (question, passages, text, list(reserve or []))
        return text, spans


def answer_steps(sets=DEV_SETS, progress=None) -> list[AnswerStep]:
    """Run the agent (ranker off) over the sets' questions; one AnswerStep per question that reached the answer."""
    from rag.agent import run_agent
    from rag.agent.settings import DEFAULT_AGENT
    from rag.answer.reader import default_reader
    from rag.retrieve import RetrievalSettings, Retriever
    from rag.studies.answer_eval import seed_items

    retriever = Retriever.open(replace(RetrievalSettings(), corpus="builtin").validated())
    backend = _Recorder(retriever.encoder.encode, default_reader())
    items = [(name, item) for name in sets for item in seed_items(QUESTIONS / name)]
    steps = []
    for i, (name, item) in enumerate(items):
        backend.last = None
        result = run_agent(item["question"], retriever.settings, DEFAULT_AGENT, backend=backend, retriever=retriever)
        failed = [w for w in result["warnings"] if w.startswith(f"llm backend '{backend.name}' failed")]
        if failed:  # the agent answered with a plain extractive backend: the recorder saw nothing
            raise RagError(f"the answer step failed while recording: {failed[0]}")
        if backend.last is not None:
            question, passages, text, reserve = backend.last
            steps.append(AnswerStep(name, question, item["key_phrase"], passages, text, reserve))
        if progress and (i + 1) % 20 == 0:
            progress(f"answered {i + 1} of {len(items)} questions")
    return steps


def design(steps: list[AnswerStep], reader):
    """[(step, candidates, features, labels)] for the steps with at least one candidate sentence."""
    from rag.answer.sentence_rank import candidates, cosines_to, features
    from rag.studies.answer_eval import contains_fact

    out = []
    for step in steps:
        cands = candidates(step.passages, reserve=step.reserve)
        if cands:
            x = features(step.question, cands, cosines_to(step.question, cands), step.answer, reader)
            y = np.array([contains_fact(c.text, step.key_phrase) for c in cands], dtype=int)
            out.append((step, cands, x, y))
    return out


def _model():
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, class_weight="balanced", max_iter=5000)


def cross_validate(rows) -> dict:
    """{set: {questions, rules, ranker_first, with_ranked, extended}} with each set scored by a model fitted on
    the others, and their total."""
    from rag.answer.sentence_rank import add_best_missing
    from rag.studies.answer_eval import contains_fact

    figures = {}
    for held in dict.fromkeys(r[0].set for r in rows):
        train = [r for r in rows if r[0].set != held]
        fit = _model().fit(np.concatenate([r[2] for r in train]), np.concatenate([r[3] for r in train]))
        f = {"questions": 0, "rules": 0, "ranker_first": 0, "with_ranked": 0, "extended": 0}
        for step, cands, x, y in (r for r in rows if r[0].set == held):
            probs = fit.predict_proba(x)[:, 1]
            order = np.argsort(-probs, kind="stable")
            answer = add_best_missing(
                step.answer, [(probs[j], cands[j].text, cands[j].passage) for j in order], THRESHOLD
            )
            f["questions"] += 1
            f["rules"] += int(contains_fact(step.answer, step.key_phrase))
            f["ranker_first"] += int(y[int(np.argmax(probs))])
            f["with_ranked"] += int(contains_fact(answer, step.key_phrase))
            f["extended"] += int(answer != step.answer)
        figures[held] = f
    figures["total"] = {k: sum(f[k] for f in figures.values()) for k in next(iter(figures.values()))}
    return figures


def train(out: Path | None = None, sets=DEV_SETS, progress=None) -> dict:
    """Collect the answer steps, cross-validate, fit on all of them, write the weights (.npz) and their JSON."""
    from rag.answer.reader import default_reader
    from rag.answer.sentence_rank import FEATURES, RETRAIN, WEIGHTS, WEIGHTS_INFO

    out = Path(out or WEIGHTS)
    if not out.parent.is_dir():  # say so before minutes of agent runs, not after
        raise RagError(
            f"cannot write the weights to {out}: folder {out.parent} does not exist; create it or pass --out"
        )
    unknown = [name for name in sets if not (QUESTIONS / name).is_file()]
    if unknown:
        raise RagError(f"no question set {', '.join(unknown)} in {QUESTIONS}")
    t0 = time.time()
    steps = answer_steps(sets, progress)
    if progress:
        progress(f"{len(steps)} answer steps; scoring their sentences")
    rows = design(steps, default_reader())
    figures = cross_validate(rows)
    fit = _model().fit(np.concatenate([r[2] for r in rows]), np.concatenate([r[3] for r in rows]))
    with open(out, "wb") as f:  # np.savez adds .npz to a name without it; a file object keeps the name as given
        np.savez(f, coef=fit.coef_[0].astype(np.float32), bias=np.float32(fit.intercept_[0]))
    info = {
        "command": RETRAIN if tuple(sets) == DEV_SETS else f"{RETRAIN} (sets: {', '.join(sets)})",
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
        "threshold": THRESHOLD,
        "most_added": MOST_ADDED,
        "C": C,
        "sets": list(sets),
        "questions": len(rows),
        "candidate_sentences": int(sum(len(r[1]) for r in rows)),
        "cross_validated_by_set": figures,
        "columns": list(FEATURES),
        "coef": [round(float(c), 4) for c in fit.coef_[0]],
        "train_seconds": round(time.time() - t0, 1),
    }
    if out == WEIGHTS:
        WEIGHTS_INFO.write_text(json.dumps(info, indent=2) + "\n")
    return info
