"""`rag train screen-head [--seed N]` (or `python -m rag.training.screen_head [SEED]`): fit the injection classifier's logit head again, with
documentation as benign text.

The classifier (rag.screen.classifier_model) is MiniLM with adapters, mean pooling and a 384→1 head. Its training
data (rag.training.screen_fit) holds corpus sentences and orders to people, but little documentation: a README's
"You can pass a timeout to every request", "Run pip install ...", "The model provides the best quality" read to it
as orders to a model. This refit keeps MiniLM and its adapters as trained and fits the head again, by logistic
regression on the pooled features of the int8 graph the screen runs (pooled_features), over a sample (SAMPLE) of the
classifier's own training texts (screen_fit.training_texts) and the pieces of real READMEs: the long descriptions
that installed Python packages ship in their metadata (`*.dist-info/METADATA`, after the headers), cut into what
the screen scores in a passage: each sentence (rag.screen.detector.pieces) and each window of two and three
neighbouring sentences.

Packages are split by the hash of their name: quarters TRAIN_QUARTERS (0 and 2) train the head, quarters 1 and 3
are left for measurement (`readme_sentences`). Packages named like a documentation folder the screen is measured on
(EXCLUDED) are never read, and neither is this project's own. refit_head writes the weights with the new head
(by default over the committed ones, with their JSON card) and returns the figures of the fit.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sys
import time
import zlib
from pathlib import Path

import numpy as np

TRAIN_QUARTERS = (0, 2)  # packages whose name hash falls here train the head; 1 and 3 are measured
EXCLUDED = re.compile(r"^(?:requests|fastapi|rag)\b", re.I)  # the measured docs folders' projects and this one
MIN_WORDS = 3  # a piece the classifier is asked about has three words or more (rag.screen.detector.wordy)
MAX_PER_PACKAGE = 400  # one long README (a changelog) does not outweigh the rest
C = 1.0  # the logistic regression's inverse regularisation
# texts the head is fitted on, drawn from the classifier's training texts and the README pieces: the head has 385
# parameters, and pooling every training text costs the 38 minutes of a full training run's forward passes
SAMPLE = {"injections": 2000, "benign": 2000, "readme": None}  # None: every README piece and window


def site_packages() -> Path:
    """The site-packages folder of the running interpreter."""
    import sysconfig

    return Path(sysconfig.get_paths()["purelib"])


def readme_sentences(quarters=TRAIN_QUARTERS, root: Path | None = None, with_windows: bool = False) -> list[str]:
    """The pieces (as the screen scores them) of the README-style descriptions of the installed packages whose name
    hash (crc32 % 4) falls in quarters; up to MAX_PER_PACKAGE per package, each once; with_windows=True adds every window
    of two and three neighbouring pieces, joined as the screen joins them."""
    from rag.screen.detector import pieces, windows, wordy

    out: list[str] = []
    for meta in sorted((root or site_packages()).glob("*.dist-info/METADATA")):
        name = meta.parent.name.split("-")[0].lower().replace("-", "_")
        if EXCLUDED.match(name) or zlib.crc32(name.encode()) % 4 not in quarters:
            continue
        text = meta.read_text(encoding="utf-8", errors="replace")
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        taken = [s for s in pieces(body) if wordy(s, MIN_WORDS)][:MAX_PER_PACKAGE]
        out += taken
        if with_windows:  # as the screen reads a passage: each window of two or three neighbouring sentences too
            out += windows(taken)
    return list(dict.fromkeys(out))


POOLED = "/Div_output_0"  # the mean-pooled tokens in the exported graph: the input of the head


def pooled_features(texts: list[str], weights: Path, threads: int = 2) -> np.ndarray:
    """[n, 384]: the classifier's mean-pooled MiniLM states (adapters applied) for each text, as the head reads them
    at query time: from the int8 ONNX graph the screen runs (rag.screen.classifier), with the pooled tensor added
    to its outputs, one text a run as the screen runs it (a padded batch would quantize it with its neighbours)."""
    import onnx
    import onnxruntime as ort

    from rag.models import minilm_tokenizer
    from rag.models.onnx_sessions import onnx_file
    from rag.screen.classifier import RETRAIN, Classifier, encode

    Classifier(weights)  # exported and quantized once, into RAG_CACHE_DIR
    model = onnx.load(str(onnx_file("screen", weights, RETRAIN).with_name("model.int8.onnx")))
    model.graph.output.append(onnx.helper.make_tensor_value_info(POOLED, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    tok = minilm_tokenizer()
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for i, text in enumerate(texts):
        out[i] = session.run([POOLED], encode(tok, [text]))[0][0]
    return out


def refit_head(
    weights: Path | None = None, out: Path | None = None, seed: int = 0, progress=print, cache: Path | None = None
) -> dict:
    """Fit the head again (see the module doc); write the weights with the new head and their JSON card."""
    from sklearn.linear_model import LogisticRegression

    from rag.screen.classifier import WEIGHTS, WEIGHTS_INFO
    from rag.training.screen_fit import training_texts

    weights, out = weights or WEIGHTS, out or WEIGHTS
    t0 = time.time()
    texts, labels = training_texts(seed)
    rng = random.Random(seed)
    pos = rng.sample([t for t, y in zip(texts, labels) if y], SAMPLE["injections"])
    neg = rng.sample([t for t, y in zip(texts, labels) if not y], SAMPLE["benign"])
    seen = set(texts)
    docs = [t for t in readme_sentences(with_windows=True) if t not in seen]
    docs = rng.sample(docs, len(docs) if SAMPLE["readme"] is None else min(len(docs), SAMPLE["readme"]))
    texts, labels = pos + neg + docs, [1] * len(pos) + [0] * (len(neg) + len(docs))
    progress(f"{len(texts)} texts ({len(pos)} injections, {len(docs)} README pieces); pooling")
    x = pooled_features(texts, weights)
    y = np.asarray(labels)
    if cache:
        np.savez_compressed(cache, x=x, y=y, texts=np.asarray(texts, dtype=object))
    clf = LogisticRegression(C=C, class_weight="balanced", max_iter=5000).fit(x, y)
    saved = dict(np.load(weights))
    previous = json.loads(WEIGHTS_INFO.read_text()) if WEIGHTS_INFO.exists() else {}
    saved["head.weight"] = clf.coef_.astype(np.float32).reshape(saved["head.weight"].shape)
    saved["head.bias"] = clf.intercept_.astype(np.float32).reshape(saved["head.bias"].shape)
    np.savez_compressed(out, **saved)
    fitted = (clf.predict_proba(x)[:, 1] >= 0.95) == y
    info = {
        **{k: v for k, v in previous.items() if k not in ("measured", "sha256", "bytes")},
        "command": f"rag train screen-head --seed {seed}",
        "adapters_from": previous.get("adapters_from") or previous.get("command", ""),  # a refit keeps them
        "head": {
            "fit": "logistic regression on the pooled features, class-balanced",
            "C": C,
            "texts": len(texts),
            "sample": SAMPLE,
            "readme_pieces": len(docs),
            "readme_quarters": list(TRAIN_QUARTERS),
            "train_accuracy_at_0.95": round(float(fitted.mean()), 4),
            "minutes": round((time.time() - t0) / 60, 1),
        },
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "bytes": out.stat().st_size,
    }
    if out == WEIGHTS:
        WEIGHTS_INFO.write_text(json.dumps(info, indent=2) + "\n")
    return info


if __name__ == "__main__":
    print(json.dumps(refit_head(seed=int(sys.argv[1]) if len(sys.argv) > 1 else 0), indent=2))
