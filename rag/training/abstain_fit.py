"""`rag train abstain`: fit the answerability decision (rag.answer.abstain) on the CPU (about 25 minutes).

Data, with no question that any evaluation scores and no documentation folder:
- SQuAD: QUESTIONS questions drawn (seed) from the reader's training articles (the first TRAIN_ARTICLES), over the
  open-domain SQuAD corpus;
- HotpotQA: the first HOTPOT_DEV queries (development) but the yes/no ones, over its corpus.
Each question gives two examples, both read by the packaged reader exactly as the answer step reads: the first
PASSAGES passages the default retriever returns (label 1 when one of them holds a gold answer, else 0), and the
first PASSAGES once every passage holding a gold answer is removed (label 0): the documents are about the question
but do not say. A SQuAD question gives a third (label 0): the first PASSAGES from other articles, as if its article
were not in the corpus, so that the documents never cover what it asks about.

scikit-learn's LogisticRegression (balanced classes) on standardised rag.answer.abstain.evidence_features, fitted
on those examples. The threshold is chosen on documentation: the built-in corpus's development question sets
(rag.training.sentence_rank_fit.DEV_SETS, the sets later ones are held out from), read the first two ways over the
built-in corpus (a passage holding the question's key phrase answers it). It is the highest at which at most
MAX_FALSE_ABSTAIN of their answerable examples would abstain (the lowest of THRESHOLDS when none does). The 5-fold
cross-validated rates on the training examples are reported beside it.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rag.data.splits import HOTPOT_DEV, squad_articles
from rag.lexicon import normalize_answer

QUESTIONS = 500  # SQuAD questions from the training articles
DEPTH = 30  # hits searched per question, so that PASSAGES remain once the answering ones are removed
OTHER_DEPTH = 100  # hits searched per SQuAD question, so that PASSAGES of other articles remain
MAX_FALSE_ABSTAIN = 0.05  # at most this share of the built-in development sets' answerable examples may abstain
THRESHOLDS = np.round(np.arange(0.05, 0.96, 0.05), 2)
C = 1.0


def holds_answer(text: str, answers: list[str]) -> bool:
    norm = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(a)} " in norm for a in answers if normalize_answer(a))


def article_of(passage_id: str) -> str:
    """The SQuAD article of a passage id ("Title#3")."""
    return passage_id.rsplit("#", 1)[0]


def calibration_questions() -> list[tuple[str, str, list[str]]]:
    """(corpus, question, [key phrase]) for the built-in development sets."""
    from rag.training.sentence_rank_fit import DEV_SETS, QUESTIONS

    out = []
    for name in DEV_SETS:
        for line in (QUESTIONS / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                q = json.loads(line)
                out.append(("builtin", q["question"], [q["key_phrase"]]))
    return out


def questions(seed: int = 0) -> list[tuple[str, str, list[str]]]:
    """(corpus, question, gold answers) for the training questions; see the module doc."""
    from rag.studies.agent_eval import load_eval_set

    squad = [
        ("squad", qa["question"], [a["text"] for a in qa["answers"]])
        for a in squad_articles("train")
        for p in a["paragraphs"]
        for qa in p["qas"]
    ]
    random.Random(seed).shuffle(squad)
    dev = load_eval_set("hotpotqa")[1][:HOTPOT_DEV]
    # a yes/no answer is not a span a passage holds: those questions cannot be labelled by containment
    hotpot = [
        ("hotpotqa", q.text, q.metadata["answers"]) for q in dev if q.metadata["answers"] not in (["yes"], ["no"])
    ]
    return squad[:QUESTIONS] + hotpot


def examples(items, progress=None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(features, labels, corpus of each example) for (corpus, question, answers) items; see the module doc."""
    from rag.answer.abstain import PASSAGES, evidence_features
    from rag.answer.reader import default_reader
    from rag.encoders import minilm_query_encoder
    from rag.retrieve import RetrievalSettings, Retriever

    reader, encoder = default_reader(), minilm_query_encoder()
    retrievers, article_by_question = {}, {}
    xs, ys, names = [], [], []
    for i, (corpus, question, answers) in enumerate(items):
        if corpus not in retrievers:
            retrievers[corpus] = Retriever.open(replace(RetrievalSettings(corpus=corpus), k=OTHER_DEPTH).validated())
            if corpus == "squad":  # a SQuAD question's article is its paragraph's (qrels)
                loaded = retrievers[corpus].corpus
                article_by_question = {q.text: article_of(next(iter(loaded.qrels[q.id]))) for q in loaded.queries}
        hits = retrievers[corpus].search(question, OTHER_DEPTH if corpus == "squad" else DEPTH)
        texts = [h.passage.text for h in hits[:DEPTH]]
        chosen_sets = [texts[:PASSAGES], [t for t in texts if not holds_answer(t, answers)][:PASSAGES]]
        if corpus == "squad":  # the question's article taken out of the corpus
            own = article_by_question.get(question, "")
            others = (h.passage.text for h in hits if article_of(h.passage.id) != own)
            chosen_sets.append([t for t in others if not holds_answer(t, answers)][:PASSAGES])
        union = list(dict.fromkeys(t for chosen in chosen_sets for t in chosen))  # each passage is read once
        read = reader.read(question, union)
        for chosen in chosen_sets:
            where = {t: i for i, t in enumerate(chosen)}  # a span's passage index over chosen, best margin first
            spans = [replace(sp, passage=where[union[sp.passage]]) for sp in read if union[sp.passage] in where]
            # encoded as query time encodes them: the question and exactly these passages in one batch
            xs.append(evidence_features(question, chosen, spans, encoder.encode))
            ys.append(int(any(holds_answer(t, answers) for t in chosen)))
            names.append(corpus)
        if progress and (i + 1) % 50 == 0:
            progress(f"{i + 1}/{len(items)} questions read")
    return np.stack(xs), np.asarray(ys), names


def choose_threshold(probabilities: np.ndarray, labels: np.ndarray) -> tuple[float, dict]:
    """The highest threshold at which at most MAX_FALSE_ABSTAIN of the answerable examples abstain; the lowest of
    THRESHOLDS when none keeps to it."""
    rates = {}
    for t in THRESHOLDS:
        abstain = probabilities < t
        rates[float(t)] = {
            "answerable_abstain": float(abstain[labels == 1].mean()),
            "unanswerable_abstain": float(abstain[labels == 0].mean()),
        }
    chosen = max((t for t, r in rates.items() if r["answerable_abstain"] <= MAX_FALSE_ABSTAIN), default=0.05)
    return chosen, rates


def calibrate(weights: Path | None = None, progress=None) -> dict:
    """Choose the threshold of already fitted weights on the built-in development sets (the second half of train);
    rewrite it, and its rates, in the weights' JSON card. Returns the card."""
    from rag.answer.abstain import WEIGHTS, WEIGHTS_INFO, Abstainer

    weights = Path(weights or WEIGHTS)
    card = weights.with_suffix(".json") if weights != WEIGHTS else WEIGHTS_INFO
    model = Abstainer(weights, card)
    x_cal, y_cal, _ = examples(calibration_questions(), progress)
    threshold, rates = choose_threshold(np.asarray([model.probability_of(x) for x in x_cal]), y_cal)
    info = json.loads(card.read_text()) if card.exists() else {}
    info.update(
        {
            "threshold": threshold,
            "threshold_command": "rag train abstain --threshold-only",
            "documentation_at_threshold": rates[threshold],
            "documentation": rates,
            "documentation_examples": int(len(y_cal)),
            "documentation_answerable": int(y_cal.sum()),
        }
    )
    if "cross_validated" in info:
        info["cross_validated_at_threshold"] = info["cross_validated"].get(str(threshold))
    card.write_text(json.dumps(info, indent=2) + "\n")
    return info


def train(out: Path | None = None, seed: int = 0, progress=None) -> dict:
    """Read the examples, fit, choose the threshold, write the weights (.npz) and their JSON; return the figures."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    from rag.answer.abstain import FEATURES, WEIGHTS, WEIGHTS_INFO

    out = out or WEIGHTS
    t0 = time.time()
    x, y, names = examples(questions(seed), progress)
    if progress:
        progress("reading the built-in development sets for the threshold")
    x_cal, y_cal, _ = examples(calibration_questions(), progress)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    z = (x - mean) / scale

    def model():
        return LogisticRegression(C=C, class_weight="balanced", max_iter=5000)

    cv = cross_val_predict(model(), z, y, cv=5, method="predict_proba")[:, 1]
    _, cv_rates = choose_threshold(cv, y)
    fit = model().fit(z, y)
    threshold, rates = choose_threshold(fit.predict_proba((x_cal - mean) / scale)[:, 1], y_cal)
    with open(out, "wb") as f:
        np.savez(
            f,
            mean=mean.astype(np.float32),
            scale=scale.astype(np.float32),
            coef=fit.coef_[0].astype(np.float32),
            bias=np.float32(fit.intercept_[0]),
        )
    info = {
        "command": f"rag train abstain --seed {seed}",
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
        "threshold": threshold,
        "documentation_at_threshold": rates[threshold],
        "documentation": rates,
        "documentation_examples": int(len(y_cal)),
        "documentation_answerable": int(y_cal.sum()),
        "cross_validated_at_threshold": cv_rates[threshold],
        "cross_validated": cv_rates,
        "examples": int(len(y)),
        "answerable": int(y.sum()),
        "by_corpus": {c: names.count(c) for c in sorted(set(names))},
        "columns": list(FEATURES),
        "coef": [round(float(c), 4) for c in fit.coef_[0]],
        "C": C,
        "max_false_abstain": MAX_FALSE_ABSTAIN,
        "train_seconds": round(time.time() - t0, 1),
    }
    if out == WEIGHTS:
        WEIGHTS_INFO.write_text(json.dumps(info, indent=2) + "\n")
    return info
