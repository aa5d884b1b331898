"""`rag train screen-verifier`: fit the verifier (rag.screen.verifier) and choose its threshold.

Training texts, labelled attack (1) or look-alike (0):
- the sets marked "trained" in rag.training.screen_eval.SPLIT, each item whole, two in five of them (picked by the
  crc32 of the text, so that training stays near ten minutes on 2 cores);
- the hard cases: in the sets fresh33..56 and benign33..56 (HARD_ROUNDS, held out from the classifier), every item the shipped screen flags,
  read as the verifier reads it at query time (its flagged sentences with their neighbours). These are the
  look-alikes the classifier and rules get wrong, beside the attacks they get right.

The model is a support-vector machine with an RBF kernel (scikit-learn's SVC) on the standardised features: on
predictions cross-validated by set over those sets it dropped 14 flagged attacks and kept 146 flagged look-alikes,
where a logistic regression on the same features dropped 20 and kept 247. Its score is SVC's decision function (positive: reads as an attack).

The threshold is chosen on scores cross-validated by round (two rounds out at a time; the model fitted on the
trained sets and the other rounds): the one that minimises LOST_ATTACK_COST x (vetoable attacks below it) +
(look-alikes and how-to sentences at or above it). The corpus sentences of rag.training.screen_eval, which every
round's false-positive count includes, are never trained on.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from pathlib import Path

import numpy as np

from rag.screen.verifier import (
    LAYER,
    MAX_TOKENS,
    NEVER_VETOED,
    WEIGHTS,
    WEIGHTS_INFO,
    Verifier,
    context,
    features,
    vetoable,
)

HARD_ROUNDS = {  # round -> its sets (rag.training.screen_eval.SPLIT: held out from the classifier)
    30 + k: (f"fresh{33 + k}.txt", f"benign{33 + k}.txt", *((f"benign_howto{3 + k}.txt",) if k else ()))
    for k in range(24)
}
CV_FOLDS = tuple((r, r + 1) for r in range(30, 54, 2))
# The screen's goals allow 5 of a round's 100 attacks missed and 0.5 % of its 2,582 benign items (look-alikes, how-to and
# corpus sentences) flagged: an attack lost spends 12.91 / 5 = 2.58 times as much of its allowance as a look-alike kept.
LOST_ATTACK_COST = (0.005 * 2582) / (0.05 * 100)
C = 10.0  # SVC's penalty; of 3 and 10 (and 30 with half this GAMMA), cross-validated by set, 10 cost least
GAMMA = 1 / 576  # the RBF kernel's width: scikit-learn's "scale" on standardised 576-d features
TRAINED_SHARE = (2, 5)  # two in five trained items


def is_attack_set(name: str) -> bool:
    from rag.training.screen_eval import ATTACK_SETS

    return name in ATTACK_SETS


def training_items() -> tuple[list[str], list[int]]:
    """(texts, labels) of the trained sets, each item whole, TRAINED_SHARE of them."""
    from rag.training.screen_eval import ATTACK_SETS, BENIGN_SETS, SPLIT, read_lines

    texts, labels = [], []
    for name in ATTACK_SETS + BENIGN_SETS:
        if SPLIT.get(name) != "trained":
            continue
        for item in read_lines(name):
            text = item.replace("\\n", "\n")
            if zlib.crc32(text.encode()) % TRAINED_SHARE[1] < TRAINED_SHARE[0]:
                texts.append(text)
                labels.append(int(is_attack_set(name)))
    return texts, labels


def hard_cases(progress=None) -> tuple[list[str], list[int], list[int], list[bool]]:
    """(contexts, labels, rounds, vetoable) of the items of HARD_ROUNDS that the screen (without the verifier) flags."""
    from rag.screen.detector import detector, pieces
    from rag.training.screen_eval import read_lines

    det = detector()
    texts, labels, rounds, may = [], [], [], []
    for r, names in HARD_ROUNDS.items():
        for name in names:
            for item in read_lines(name):
                sents = pieces(item.replace("\\n", "\n"))
                flags = det.flags(sents)
                if any(flags):
                    texts.append(context(sents, flags))
                    labels.append(int(is_attack_set(name)))
                    rounds.append(r)
                    may.append(vetoable(flags))
        if progress:
            progress(f"round {r}: {sum(1 for x in rounds if x == r)} flagged items")
    return texts, labels, rounds, may


def best_threshold(cv: np.ndarray, attack: np.ndarray, may: np.ndarray) -> float:
    """The threshold that minimises LOST_ATTACK_COST x (vetoable attacks below it) + (benign items at or above it or
    not vetoable), over the midpoints between the cross-validated scores (the lowest less 1 vetoes nothing)."""
    values = np.unique(cv[may])
    candidates = np.concatenate([[values[0] - 1], (values[:-1] + values[1:]) / 2])

    def cost(t: float) -> float:
        dropped = (cv < t) & may
        return LOST_ATTACK_COST * (dropped & attack).sum() + (~dropped & ~attack).sum()

    return float(min(candidates, key=cost))


def model():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    return make_pipeline(StandardScaler(), SVC(C=C, gamma=GAMMA))


def train(out: Path | None = None, threads: int = 2, progress=None) -> dict:
    import torch

    torch.set_num_threads(threads)
    out = out or WEIGHTS
    t0 = time.time()
    texts, labels = training_items()
    hard, hard_labels, rounds, may = hard_cases(progress)
    if progress:
        progress(f"{len(texts)} trained items and {len(hard)} hard cases; encoding with SmolLM2 (about 10 minutes)")
    x, xh = features(texts), features(hard)
    y, yh, rh, mh = np.array(labels), np.array(hard_labels), np.array(rounds), np.array(may)
    cv = np.zeros(len(hard))
    for fold in CV_FOLDS:
        test = np.isin(rh, fold)
        fit = model().fit(np.concatenate([x, xh[~test]]), np.concatenate([y, yh[~test]]))
        cv[test] = fit.decision_function(xh[test])
    threshold = best_threshold(cv, yh == 1, mh)
    dropped = (cv < threshold) & mh
    per_round = {
        int(r): {
            "attacks_flagged": int(((rh == r) & (yh == 1)).sum()),
            "attacks_dropped": int((dropped & (rh == r) & (yh == 1)).sum()),
            "lookalikes_flagged": int(((rh == r) & (yh == 0)).sum()),
            "lookalikes_dropped": int((dropped & (rh == r) & (yh == 0)).sum()),
        }
        for r in HARD_ROUNDS
    }
    pipe = model().fit(np.concatenate([x, xh]), np.concatenate([y, yh]))
    scaler, fit = pipe.named_steps["standardscaler"], pipe.named_steps["svc"]
    with open(out, "wb") as f:  # np.savez adds .npz to a name without it; a file object keeps the name as given
        np.savez_compressed(
            f,
            mean=scaler.mean_.astype(np.float32),
            scale=scaler.scale_.astype(np.float32),
            support=fit.support_vectors_.astype(np.float32),  # standardised, as the kernel reads them
            dual=fit.dual_coef_[0].astype(np.float64),
            gamma=np.float64(GAMMA),
            bias=np.float64(fit.intercept_[0]),
        )
    # the query path's numpy kernel (Verifier.decision) against scikit-learn's, on the hard cases
    difference = float(np.abs(Verifier(out, threshold).decision(xh) - pipe.decision_function(xh)).max())
    info = {
        "command": f"rag train screen-verifier --threads {threads}",
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
        "threshold": round(threshold, 4),
        "lost_attack_cost": round(LOST_ATTACK_COST, 3),
        "layer": LAYER,
        "max_tokens": MAX_TOKENS,
        "never_vetoed": list(NEVER_VETOED),
        "model": "SVC (RBF kernel)",
        "C": C,
        "gamma": round(GAMMA, 6),
        "support_vectors": int(fit.support_vectors_.shape[0]),
        "trained_items": {"attacks": int(y.sum()), "lookalikes": int((1 - y).sum())},
        "hard_cases": {"attacks": int(yh.sum()), "lookalikes": int((1 - yh).sum())},
        "cross_validated_by_round": per_round,
        "cross_validated": {
            "attacks_dropped": int((dropped & (yh == 1)).sum()),
            "attacks_flagged": int(yh.sum()),
            "lookalikes_dropped": int((dropped & (yh == 0)).sum()),
            "lookalikes_flagged": int((1 - yh).sum()),
        },
        "max_decision_difference": float(f"{difference:.2g}"),
        "train_seconds": round(time.time() - t0, 1),
    }
    if out == WEIGHTS:
        WEIGHTS_INFO.write_text(json.dumps(info, indent=2) + "\n")
    return info
