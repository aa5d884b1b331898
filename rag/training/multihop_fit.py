"""`rag train hop`: fit the multi-hop decision (rag.agent.multihop) in a few seconds on the CPU.

Data, with no question that any evaluation scores:
- multi-hop: the first HOTPOT_DEV HotpotQA queries (the answer evaluation holds out the rest) and the questions of
  hotpot_dev_distractor_sample100.json that are not among the held-out queries;
- single-hop: SINGLE_HOP questions drawn (seed 0) from the SQuAD articles the reader trains on (the first
  TRAIN_ARTICLES; the answer evaluation reads only the last EVAL_ARTICLES).

scikit-learn's LogisticRegression (balanced classes, C below) on rag.agent.multihop.design_matrix. The threshold is
chosen on 5-fold cross-validated probabilities: the lowest at which at most MAX_SINGLE_HOP_RATE of the single-hop
questions would hop (the answer issue allows 5 % decomposed single-hop questions; two points are left for the
noise of a 300-question measure).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path

import numpy as np

from rag.data.splits import HOTPOT_DEV, squad_articles

SINGLE_HOP = 1000  # SQuAD questions drawn from the training articles
C = 1.0  # inverse L2 strength (1.0 was best of 0.3/1/3 on cross-validation; flat between them)
MAX_SINGLE_HOP_RATE = 0.03  # at most this share of cross-validated single-hop questions may hop (goal: 5 %)
THRESHOLDS = np.round(np.arange(0.30, 0.96, 0.05), 2)


def training_questions(seed: int = 0) -> tuple[list[str], list[int]]:
    """(questions, labels: 1 multi-hop, 0 single-hop); see the module doc."""
    from rag.config import data_dir
    from rag.data.corpus import load_corpus

    queries = list(load_corpus("hotpotqa").queries)
    dev, held_out = queries[:HOTPOT_DEV], {q.id for q in queries[HOTPOT_DEV:]}
    multi = [q.text for q in dev]
    sample = data_dir() / "hotpotqa" / "hotpot_dev_distractor_sample100.json"
    if sample.exists():
        extra = json.loads(sample.read_bytes().decode("utf-8"))
        multi += [x["question"] for x in extra if x["_id"] not in held_out and x["question"] not in multi]
    single = [qa["question"] for a in squad_articles("train") for p in a["paragraphs"] for qa in p["qas"]]
    random.Random(seed).shuffle(single)
    single = single[:SINGLE_HOP]
    return multi + single, [1] * len(multi) + [0] * len(single)


def choose_threshold(probabilities: np.ndarray, labels: np.ndarray) -> tuple[float, dict]:
    """The lowest threshold whose single-hop hop rate is at most MAX_SINGLE_HOP_RATE, and the rates at each."""
    rates = {}
    for t in THRESHOLDS:
        hop = probabilities >= t
        rates[float(t)] = {
            "multi_hop_hops": float(hop[labels == 1].mean()),
            "single_hop_hops": float(hop[labels == 0].mean()),
        }
    chosen = min((t for t, r in rates.items() if r["single_hop_hops"] <= MAX_SINGLE_HOP_RATE), default=0.95)
    return chosen, rates


def train(out: Path | None = None, seed: int = 0, progress=None) -> dict:
    """Fit, choose the threshold, write the weights (.npz) and their JSON; return the JSON's figures."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    from rag.agent.multihop import FEATURES, WEIGHTS, WEIGHTS_INFO, design_matrix
    from rag.encoders import minilm_query_encoder

    out = out or WEIGHTS
    t0 = time.time()
    questions, labels = training_questions(seed)
    y = np.asarray(labels)
    if progress:
        progress(f"{int(y.sum())} multi-hop and {int((1 - y).sum())} single-hop questions; encoding")
    x = design_matrix(questions, minilm_query_encoder())

    def model():
        return LogisticRegression(C=C, class_weight="balanced", max_iter=5000)

    cv = cross_val_predict(model(), x, y, cv=5, method="predict_proba")[:, 1]
    threshold, rates = choose_threshold(cv, y)
    fit = model().fit(x, y)
    with open(out, "wb") as f:  # np.savez adds .npz to a name without it; a file object keeps the name as given
        np.savez(f, coef=fit.coef_[0].astype(np.float32), bias=np.float32(fit.intercept_[0]))
    info = {
        "command": f"rag train hop --seed {seed}",
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
        "threshold": threshold,
        "cross_validated_at_threshold": rates[threshold],
        "cross_validated": rates,
        "multi_hop_questions": int(y.sum()),
        "single_hop_questions": int((1 - y).sum()),
        "columns": ["MiniLM embedding (384)", *FEATURES],
        "C": C,
        "max_single_hop_rate": MAX_SINGLE_HOP_RATE,
        "train_seconds": round(time.time() - t0, 1),
    }
    if out == WEIGHTS:
        WEIGHTS_INFO.write_text(json.dumps(info, indent=2) + "\n")
    return info
