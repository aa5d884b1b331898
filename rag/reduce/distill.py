"""The `distill` reducer: a linear map from full width to d, learned without labels so that the reduced vectors
rank the corpus's documents the way the full-width vectors do (similarity distillation).

Training queries are the corpus's own pseudo-queries (rag.reduce.pseudo) plus the documents themselves. For
each one the teacher is the softmax, at a low temperature, of its full-width cosine with every candidate
document; the student is the same softmax over the reduced vectors (learned temperature); the loss is the KL
divergence between the two, so the top neighbours dominate. The map starts from PCA and is trained with Adam
on the CPU within a time budget and at most MAX_STEPS steps. A fifth of the pseudo-queries is held out: every
few steps the map is scored by how much of the full-width top 10 it keeps on them, and the best map is kept. If
no map beats PCA on that score, the fit falls back to PCA and says so in `info["fell_back"]`.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

TEACHER_TEMPERATURE = 0.05
BATCH = 256
MAX_CANDIDATES = 8192  # corpora larger than this train against a sample of documents per step
CHECK_EVERY = 20
MAX_STEPS = 600  # beyond ~500 steps the held-out pseudo-query overlap still rises but real-query nDCG does not
# (SciFact d=32: 0.500 after 373 steps, 0.488 after 1,500), so the fit is bounded in steps as well as in time
PATIENCE = 15  # checks without a better held-out score before the fit stops early
TOP = 10
LR = 2e-3  # Adam step for the map (its entries start near 1/sqrt(width))


def overlap_at_k(q: np.ndarray, docs: np.ndarray, reference: np.ndarray, k: int = TOP) -> float:
    """Mean share of each reference top-k (row ids) that the exact top-k of q against docs keeps."""
    scores = q @ docs.T
    top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(top.tolist(), reference.tolist())]))


def teacher_log_probs(q, x, query_doc: np.ndarray, cand: np.ndarray):
    """Log-softmax, at the teacher temperature, of the full-width scores of queries q against documents cand
    (a query that is itself one of the documents never finds itself)."""
    import torch

    with torch.no_grad():
        scores = q @ x[torch.from_numpy(cand)].T
        self_hit = torch.from_numpy(query_doc[:, None] == cand[None, :])
        return torch.log_softmax(scores.masked_fill(self_hit, -1e4) / TEACHER_TEMPERATURE, 1)


def fit_distill(
    docs: np.ndarray,
    dim: int,
    queries: np.ndarray | None,
    init: tuple[np.ndarray, np.ndarray],
    budget_s: float = 40.0,
    max_steps: int = MAX_STEPS,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[np.ndarray, dict]:
    """The learned [width, d] matrix (applied after subtracting init's mean) and what the fit measured."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    mean, w0 = init
    docs = np.ascontiguousarray(docs, np.float32)
    n = len(docs)
    if queries is None or len(queries) < 10:  # no pseudo-queries: documents stand in for them
        queries = docs[rng.choice(n, size=min(n, 500), replace=False)]
    queries = queries / np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
    n_val = max(5, len(queries) // 5)
    val, train_q = queries[:n_val], queries[n_val:]
    k = min(TOP, n)
    ref = np.argpartition(-(val @ docs.T), k - 1, axis=1)[:, :k]

    x = torch.from_numpy(docs)
    xc = x - torch.from_numpy(mean)
    w = torch.nn.Parameter(torch.from_numpy(np.ascontiguousarray(w0, np.float32)))
    log_t = torch.nn.Parameter(torch.tensor(float(np.log(TEACHER_TEMPERATURE))))
    opt = torch.optim.Adam([{"params": [w], "lr": LR}, {"params": [log_t], "lr": 1e-2}])

    def reduced(a: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(a @ m, dim=1)

    def score(m: torch.Tensor) -> float:
        with torch.no_grad():
            d_red = reduced(xc, m).numpy()
            q_red = reduced(torch.from_numpy(val) - torch.from_numpy(mean), m).numpy()
        return overlap_at_k(q_red, d_red, ref, k)

    pca_score = best_score = score(w.detach())
    best, steps, started, stale = w.detach().clone(), 0, time.perf_counter(), 0
    pool = np.concatenate([train_q, docs]) if len(train_q) else docs  # documents are queries too (+0.004..0.033)
    is_doc = np.r_[np.full(len(train_q), -1), np.arange(n)]  # a document query must not find itself
    every = np.arange(n)
    # On a corpus that fits, the teacher's log-softmax over every document is computed once, not per step.
    teacher_all = teacher_log_probs(torch.from_numpy(pool), x, is_doc, every) if n <= MAX_CANDIDATES else None
    while steps < max_steps and time.perf_counter() - started < budget_s and stale < PATIENCE:
        pick = rng.choice(len(pool), size=min(BATCH, len(pool)), replace=False)
        cand = every if n <= MAX_CANDIDATES else rng.choice(n, size=MAX_CANDIDATES, replace=False)
        q = torch.from_numpy(pool[pick])
        teacher = (
            teacher_all[torch.from_numpy(pick)]
            if teacher_all is not None
            else teacher_log_probs(q, x, is_doc[pick], cand)
        )
        self_hit = torch.from_numpy(is_doc[pick][:, None] == cand[None, :])
        docs_red = reduced(xc, w) if teacher_all is not None else reduced(xc[cand], w)
        student = reduced(q - torch.from_numpy(mean), w) @ docs_red.T
        student = student.masked_fill(self_hit, -1e4) / log_t.exp()
        loss = torch.nn.functional.kl_div(
            torch.log_softmax(student, 1), teacher, log_target=True, reduction="batchmean"
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if steps % CHECK_EVERY == 0:
            s = score(w.detach())
            stale += 1
            if s > best_score:
                best_score, best, stale = s, w.detach().clone(), 0
            if progress:
                progress(min(steps, max_steps), max_steps)
    if progress:
        progress(max_steps, max_steps)
    fell_back = best_score <= pca_score
    info = {
        "steps": steps,
        "seconds": round(time.perf_counter() - started, 2),
        "pca_overlap@10": round(pca_score, 4),
        "overlap@10": round(best_score, 4),
        "held_out_queries": int(n_val),
        "fell_back": bool(fell_back),
    }
    return (np.asarray(w0, np.float32) if fell_back else best.numpy()), info
