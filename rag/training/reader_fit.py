"""`rag train reader`: fine-tune a span-extraction head on the packaged MiniLM with low-rank adapters (torch, CPU).

Data: SQuAD v1.1 dev, the first TRAIN_ARTICLES articles in file order (the last EVAL_ARTICLES articles are only for
evaluation; rag.studies.answer_eval reads them). Windows come from rag.answer.reader.featurize, the function query
time uses. A window that does not hold the whole answer is labelled [CLS] ("not in this window").

Model: MiniLM (BertModel) with rank-RANK adapters on every linear layer of its 6 blocks (query, key, value, the
attention output, both feed-forward layers), its LayerNorms trainable, and a 384→2 span head. Only those are
saved (about 5 MB a stage; the committed rag/models/reader_weights.npz, a soup of two stages, 9.9 MB), so the
committed artefact stays small; export_reader merges them into the packaged weights and writes the ONNX model
query time runs.

A second stage (`--hotpot --init <SQuAD weights>`) goes on from the SQuAD weights with two-paragraph reading:
HotpotQA's distractor sample (hotpot_dev_distractor_sample100.json, without the questions the answer evaluation
holds out or develops on, and without yes/no answers) gives each question's two gold paragraphs joined as the
PairReader joins them (both orders), the answer paragraph joined with a distractor, and two distractors joined
(no answer). As many SQuAD training windows are mixed in, so single-paragraph reading is kept. With --soup the
saved weights are the mean of the first stage's and the second's (a "model soup", rag.models.adapters: the
adapters stacked to rank 64, about 9.9 MB): measured on the 100 HotpotQA development questions' captured
passages, answer F1 0.530 (first stage) -> 0.585 (second) -> 0.573 (soup), and SQuAD reading F1 (last 8
articles) 0.711 -> 0.698 -> 0.727, so the soup keeps both.

A third stage (`--negatives --init <weights>`) teaches the reader to say "not in this passage" for passages that
are about the question but do not answer it, as SQuAD 2.0 does, so that its null score tells "about this" from
"says this" (the answerability decision, rag.answer.abstain, reads it). For NEGATIVE_QUESTIONS SQuAD questions of
the training articles (none of the QUESTIONS that `rag train abstain` fits on), BM25's first NEGATIVE_DEPTH
passages over the SQuAD corpus (no dense index to build) that come from a training article and hold no answer give
NEGATIVES_PER_QUESTION (question, passage) pairs labelled [CLS] in every window, beside the question's own
paragraph with its answer; HotpotQA's distractor sample gives its joined pairs (as the second stage) and each
question's distractors alone, labelled [CLS]. Half as many SQuAD training windows with their answers are mixed in,
so reading holds.

Checkpoints go to --checkpoint-dir every CHECKPOINT_EVERY steps; a killed run started again with the same
arguments resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from pathlib import Path

import numpy as np

from rag.answer.reader import WEIGHTS, WEIGHTS_INFO, featurize, pad_batch
from rag.answer.reader_model import ALPHA, RANK, build_model, load_weights
from rag.data.splits import TRAIN_ARTICLES, squad_articles
from rag.models import minilm_tokenizer
from rag.models.adapters import average_weights, save_weights, saved_rank

CHECKPOINT_EVERY = 25
HOTPOT_SAMPLE = "hotpot_dev_distractor_sample100.json"  # under RAG_DATA_DIR/hotpotqa
NEGATIVE_QUESTIONS = 400  # SQuAD training questions whose retrieved, non-answering passages are read as "no answer"
NEGATIVE_DEPTH = 10  # retrieved passages searched for them
NEGATIVES_PER_QUESTION = 2
HOTPOT_DISTRACTORS = 2  # distractor paragraphs per HotpotQA question read alone as "no answer"


def answer_tokens(window, start_char: int, end_char: int) -> tuple[int, int]:
    """(first, last) token of the answer in the window, or (CLS position 0, 0) when the window lacks it."""
    idx = [i for i, o in enumerate(window.offsets) if o is not None]
    if not idx or window.offsets[idx[0]][0] > start_char or window.offsets[idx[-1]][1] < end_char:
        return 0, 0
    a = next(i for i in idx if window.offsets[i][1] > start_char)
    b = next(i for i in reversed(idx) if window.offsets[i][0] < end_char)
    return (a, b) if a <= b else (0, 0)


def training_windows(articles: list[dict], limit: int | None = None) -> list[tuple]:
    """[(window, start token, end token)] for every question of the articles (the first answer is the label)."""
    tok = minilm_tokenizer()
    out, n = [], 0
    for article in articles:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                if limit is not None and n >= limit:
                    return out
                n += 1
                ans = qa["answers"][0]
                s, e = ans["answer_start"], ans["answer_start"] + len(ans["text"])
                for w in featurize(tok, qa["question"], [para["context"]]):
                    out.append((w, *answer_tokens(w, s, e)))
    return out


def hotpot_examples() -> list[tuple[str, str, int, int]]:
    """[(question, joined text, answer start, answer end)] from HotpotQA's distractor sample (see the module doc)."""
    from rag.answer.reading import PAIR_JOIN
    from rag.config import RagError, data_dir
    from rag.data.corpus import load_corpus

    path = data_dir() / "hotpotqa" / HOTPOT_SAMPLE
    if not path.exists():
        raise RagError(f"HotpotQA's sample not found at {path}; set RAG_DATA_DIR to the folder that holds hotpotqa/")
    kept_out = {q.id for q in load_corpus("hotpotqa").queries}  # dev and held-out queries: never trained on
    rng = random.Random(0)
    out = []
    for item in json.loads(path.read_bytes().decode("utf-8")):
        answer = item["answer"].strip()
        if item["_id"] in kept_out or answer.lower() in ("yes", "no"):
            continue
        paragraphs = {title: "".join(sentences) for title, sentences in item["context"]}
        gold = list(dict.fromkeys(t for t, _ in item["supporting_facts"] if t in paragraphs))
        holding = [t for t in gold if answer in paragraphs[t]]
        others = [t for t in paragraphs if t not in gold]
        if len(gold) != 2 or not holding or len(others) < 4:
            continue
        rng.shuffle(others)
        a = holding[-1]  # the second hop's paragraph when both hold it
        pairs = [(gold[0], gold[1]), (gold[1], gold[0]), (a, others[0]), (others[1], a), (others[2], others[3])]
        for first, second in pairs:
            text = paragraphs[first] + PAIR_JOIN + paragraphs[second]
            if a not in (first, second):
                out.append((item["question"], text, -1, -1))
                continue
            base = 0 if first == a else len(paragraphs[first]) + len(PAIR_JOIN)
            start = base + paragraphs[a].index(answer)
            out.append((item["question"], text, start, start + len(answer)))
    return out


def hotpot_windows(seed: int = 0) -> list[tuple]:
    """The second stage's windows: HotpotQA pairs, and as many SQuAD training windows drawn at random."""
    tok = minilm_tokenizer()
    out = []
    for question, text, s, e in hotpot_examples():
        for w in featurize(tok, question, [text]):
            out.append((w, *((0, 0) if s < 0 else answer_tokens(w, s, e))))
    squad = training_windows(squad_articles("train"))
    random.Random(seed).shuffle(squad)
    return out + squad[: len(out)]


def negative_questions(seed: int = 0) -> list[tuple[str, list[str], str, int]]:
    """[(question, gold answers, its paragraph, answer start)]: NEGATIVE_QUESTIONS SQuAD training questions drawn
    (seed) from those `rag train abstain` does not fit on."""
    from rag.training.abstain_fit import questions as abstain_questions

    kept_out = {q for corpus, q, _ in abstain_questions(seed) if corpus == "squad"}
    items = [
        (qa["question"], [a["text"] for a in qa["answers"]], para["context"], qa["answers"][0]["answer_start"])
        for a in squad_articles("train")
        for para in a["paragraphs"]
        for qa in para["qas"]
        if qa["question"] not in kept_out
    ]
    random.Random(seed + 1).shuffle(items)
    return items[:NEGATIVE_QUESTIONS]


def negative_windows(seed: int = 0, progress=None) -> list[tuple]:
    """The third stage's windows (see the module doc): retrieved passages that do not answer, labelled [CLS]; the
    questions' own paragraphs with their answers; HotpotQA's pairs and lone distractors; as many SQuAD training
    windows."""
    from dataclasses import replace

    from rag.retrieve import RetrievalSettings, Retriever
    from rag.retrieve.settings import SPARSE_RETRIEVER
    from rag.training.abstain_fit import holds_answer

    tok = minilm_tokenizer()
    allowed = {a["title"].replace("_", " ") for a in squad_articles("train")}
    settings = RetrievalSettings(corpus="squad", retriever=SPARSE_RETRIEVER)  # no dense index to build
    retriever = Retriever.open(replace(settings, k=NEGATIVE_DEPTH).validated())
    items = negative_questions(seed)
    hits = retriever.search_many([q for q, *_ in items], NEGATIVE_DEPTH)
    out, negatives = [], 0
    for (question, answers, context, start), found in zip(items, hits):
        texts = [
            h.passage.text for h in found if h.passage.title in allowed and not holds_answer(h.passage.text, answers)
        ][:NEGATIVES_PER_QUESTION]
        for w in featurize(tok, question, texts):
            out.append((w, 0, 0))
            negatives += 1
        for w in featurize(tok, question, [context]):
            out.append((w, *answer_tokens(w, start, start + len(answers[0]))))
    rng = random.Random(seed)
    for question, text, s, e in hotpot_examples():
        for w in featurize(tok, question, [text]):
            out.append((w, *((0, 0) if s < 0 else answer_tokens(w, s, e))))
    for question, distractors in hotpot_distractors():
        for w in featurize(tok, question, rng.sample(distractors, HOTPOT_DISTRACTORS)):
            out.append((w, 0, 0))
            negatives += 1
    if progress:
        progress(f"{negatives} retrieved or distractor windows labelled no answer, {len(out) - negatives} others")
    squad = training_windows(squad_articles("train"))
    rng.shuffle(squad)
    return out + squad[: len(out) // 2]


def hotpot_distractors() -> list[tuple[str, list[str]]]:
    """[(question, its distractor paragraphs)] for the HotpotQA sample questions hotpot_examples() reads."""
    from rag.config import data_dir
    from rag.data.corpus import load_corpus

    kept_out = {q.id for q in load_corpus("hotpotqa").queries}
    out = []
    for item in json.loads((data_dir() / "hotpotqa" / HOTPOT_SAMPLE).read_bytes().decode("utf-8")):
        answer = item["answer"].strip()
        if item["_id"] in kept_out or answer.lower() in ("yes", "no"):
            continue
        gold = {t for t, _ in item["supporting_facts"]}
        others = ["".join(sentences) for title, sentences in item["context"] if title not in gold]
        others = [t for t in others if answer not in t]
        if len(others) >= HOTPOT_DISTRACTORS:
            out.append((item["question"], others))
    return out


def train(
    out: Path = WEIGHTS,
    epochs: float = 2.0,
    batch: int = 16,
    lr: float = 1e-3,
    minutes: float | None = None,
    limit: int | None = None,
    threads: int = 2,
    checkpoint_dir: Path | None = None,
    seed: int = 0,
    hotpot: bool = False,
    init: Path | None = None,
    soup: bool = False,
    negatives: bool = False,
    progress=None,
) -> dict:
    """Train the adapters and head (from init's weights when given); write the weights and WEIGHTS_INFO; return
    the training figures. hotpot: the second stage's data (see the module doc) instead of SQuAD's. soup: write
    the mean of init's and the trained weights (see the module doc)."""
    if soup and (not init or Path(init).resolve() == Path(out).resolve()):
        from rag.config import RagError

        raise RagError("--soup averages the trained weights with --init's: give --init, a file other than --out")
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    t0 = time.time()
    if negatives:
        data = negative_windows(seed, progress)
    else:
        data = hotpot_windows(seed) if hotpot else training_windows(squad_articles("train"), limit)
    n_questions = len({tuple(w.input_ids[: w.token_type_ids.index(1)]) for w, *_ in data})
    model, trainable = build_model(saved_rank(init, RANK) if init else RANK)  # a soup's stacked rank
    init_sha = hashlib.sha256(Path(init).read_bytes()).hexdigest() if init else None
    if init:
        load_weights(model, init)
    opt = torch.optim.AdamW(trainable.values(), lr=lr, weight_decay=0.01)
    per_epoch = math.ceil(len(data) / batch)
    total = max(1, int(per_epoch * epochs))
    warmup = max(1, min(total // 20, 30))
    budget = minutes * 60 if minutes else None
    step, losses, spent = 0, [], 0.0

    def lr_at(step: int) -> float:
        """Linear warm-up, then linear decay to 0 at `total` steps or, with a time budget, when it is spent."""
        left = (total - step) / max(1, total - warmup)
        if budget:
            left = min(left, 1.0 - spent / budget)
        return lr * min((step + 1) / warmup, max(0.0, left))

    ckpt = checkpoint_dir / "reader-ckpt.pt" if checkpoint_dir else None
    if ckpt and ckpt.exists():
        state = torch.load(ckpt, weights_only=False)
        for n, p in trainable.items():
            p.data.copy_(state["params"][n])
        opt.load_state_dict(state["opt"])
        step, losses, spent = state["step"], state["losses"], state["spent"]
        if progress:
            progress(f"resumed at step {step}/{total}")
    model.train()
    order = _batches(data, batch, total, seed)
    loss_fn = torch.nn.CrossEntropyLoss()
    t_run = time.time() - spent
    while step < total and (budget is None or spent < budget):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        items = [data[i] for i in order[step]]
        arrays = pad_batch([w for w, *_ in items])
        inputs = {k: torch.from_numpy(v) for k, v in arrays.items()}
        starts = torch.tensor([a for _, a, _ in items])
        ends = torch.tensor([b for _, _, b in items])
        s_logits, e_logits = model(**inputs)
        loss = (loss_fn(s_logits, starts) + loss_fn(e_logits, ends)) / 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable.values(), 1.0)
        opt.step()
        step += 1
        spent = time.time() - t_run
        losses.append(float(loss.detach()))
        if progress and step % 10 == 0:
            progress(f"step {step}/{total} loss {np.mean(losses[-10:]):.3f} lr {lr_at(step):.2e} {spent:.0f}s")
        if ckpt and step % CHECKPOINT_EVERY == 0:
            ckpt.parent.mkdir(parents=True, exist_ok=True)
            state = {
                "params": {n: p.detach().clone() for n, p in trainable.items()},
                "opt": opt.state_dict(),
                "step": step,
                "spent": spent,
                "losses": losses,
            }
            torch.save(state, str(ckpt) + ".tmp")
            Path(str(ckpt) + ".tmp").replace(ckpt)
    save_weights(trainable, out)
    if soup:
        average_weights([init, out], out)
    info = {
        "command": f"rag train reader --epochs {epochs:g} --batch {batch} --lr {lr:g}"
        + (f" --minutes {minutes:g}" if minutes else "")
        + (f" --limit {limit}" if limit else "")
        + (" --hotpot" if hotpot else "")
        + (" --negatives" if negatives else "")
        + (f" --init {init}" if init else "")
        + (" --soup" if soup else ""),
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
        "data": (
            f"{NEGATIVE_QUESTIONS} SQuAD training questions (none `rag train abstain` fits on) with "
            f"{NEGATIVES_PER_QUESTION} retrieved passages each that do not answer (no answer) and their own paragraph; "
            f"HotpotQA {HOTPOT_SAMPLE} (not the evaluated queries) as joined pairs and {HOTPOT_DISTRACTORS} lone "
            "distractors (no answer); half as many SQuAD training windows"
            if negatives
            else f"HotpotQA {HOTPOT_SAMPLE} (not the evaluated queries) as joined pairs, and as many SQuAD windows"
            if hotpot
            else f"SQuAD v1.1 dev, first {TRAIN_ARTICLES} articles (file order)"
        ),
        "no_answer_windows": int(sum(1 for _, a, b in data if a == 0 and b == 0)),
        "questions": n_questions,
        "windows": len(data),
        "epochs_planned": epochs,
        "minutes_budget": minutes,
        "steps": step,
        "epochs_done": round(step / per_epoch, 3),
        "batch": batch,
        "lr": lr,
        "rank": saved_rank(out, RANK),  # a soup stacks its stages' adapters
        "alpha": ALPHA,
        "trainable_parameters": int(sum(p.numel() for p in trainable.values())),
        "max_tokens": int(max(len(w.input_ids) for w, *_ in data)),
        "loss_first_50": round(float(np.mean(losses[:50])), 4),
        "loss_last_50": round(float(np.mean(losses[-50:])), 4),
        "train_minutes": round((time.time() - t0) / 60, 1),
        "threads": threads,
    }
    if init:
        info["first_stage"] = _first_stage_info(init_sha)
    if out == WEIGHTS:
        WEIGHTS_INFO.write_text(json.dumps(info, indent=2) + "\n")
    return info


def _first_stage_info(sha256: str) -> dict:
    """The committed JSON's figures when --init was the committed weights (read before they were replaced), else
    the init file's sha256 alone."""
    known = json.loads(WEIGHTS_INFO.read_text()) if WEIGHTS_INFO.exists() else {}
    return known if known.get("sha256") == sha256 else {"sha256": sha256}


def _batches(data: list, batch: int, total: int, seed: int) -> list[list[int]]:
    """Batches of windows of similar length (less padding), in a shuffled order, for `total` steps."""
    out, epoch = [], 0
    while len(out) < total:
        rng = random.Random(seed + epoch)
        idx = list(range(len(data)))
        rng.shuffle(idx)
        chunks = [idx[i : i + batch * 32] for i in range(0, len(idx), batch * 32)]
        epoch_batches = []
        for chunk in chunks:
            chunk.sort(key=lambda i: len(data[i][0].input_ids))
            epoch_batches += [chunk[i : i + batch] for i in range(0, len(chunk), batch)]
        rng.shuffle(epoch_batches)
        out += epoch_batches
        epoch += 1
    return out[:total]
