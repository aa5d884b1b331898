"""The injection classifier at query time: MiniLM fine-tuned with adapters (rag.screen.classifier_model, trained by
`rag train screen`), run through ONNX Runtime (torch-free; exported once, rag.models.onnx_sessions).

`Classifier.probabilities(texts)` gives, for each text, the probability that it addresses the model that reads it
(an instruction to override, to say something, to take a role, to leak or link) rather than informing a human.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag.models import model_file

WEIGHTS = model_file("injection_classifier.npz")
WEIGHTS_INFO = model_file("injection_classifier.json")  # sha256, training command and figures
RETRAIN = "rag train screen"
INT8 = True  # query time runs the int8 model: twice as fast on a CPU; its probabilities stay within 0.02 of fp32's
#              (tests/encoders/test_onnx_models.py), and rag.training.screen_eval measures the screen as it runs
MAX_TOKENS = 96  # a longer text is cut (the detector checks sentences and windows of up to three)


def encode(tok, texts: list[str], max_tokens: int = MAX_TOKENS) -> dict[str, np.ndarray]:
    """[CLS] normalised text [SEP], cut at max_tokens, padded: the classifier's inputs (training and query time)."""
    from rag.screen.normalize import normalize

    rows = [tok.encode(normalize(t), add_special_tokens=False).ids[: max_tokens - 2] for t in texts]
    width = max(len(r) for r in rows) + 2
    ids = np.zeros((len(rows), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, : len(r) + 2] = [101, *r, 102]
        mask[i, : len(r) + 2] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _export(weights: Path, target: Path) -> None:
    from rag.screen.classifier_model import export_classifier

    export_classifier(weights, target)


class Classifier:
    def __init__(self, weights: Path = WEIGHTS, threads: int | None = None, int8: bool = INT8):
        from rag.models import minilm_tokenizer
        from rag.models.onnx_sessions import load_session

        self.tok = minilm_tokenizer()
        self.session = load_session("screen", weights, _export, RETRAIN, threads, int8=int8)

    def probabilities(self, texts: list[str]) -> np.ndarray:
        """One text a run: the int8 model quantizes a run's activations with one scale, so in a padded batch a text's
        probability depends on the texts beside it (by up to 0.19 on documentation sentences) and a sentence's verdict
        would depend on what was screened with it; alone it is the same every time, at about 4 % more time."""
        out = np.zeros(len(texts), dtype=np.float32)
        for i, text in enumerate(texts):
            (logit,) = self.session.run(None, encode(self.tok, [text]))  # run() is thread-safe
            out[i] = 1 / (1 + np.exp(-float(logit.reshape(-1)[0])))
        return out
