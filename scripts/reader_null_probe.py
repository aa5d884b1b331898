"""How well the span reader's "no answer" evidence tells apart questions a folder answers from those it does not.

Measurement only (nothing here is fitted or chosen on the folders). For each (folder, question file) pair it takes
the first five passages the default retriever returns for each question (what the answer step mostly reads), reads
them with each given reader weights file, and computes rag.answer.abstain's evidence features. Per weights file it
reports, over the questions: the packaged answerability model's abstentions at its threshold (absent and answerable),
and the area under the ROC curve of its probability and of the reader features (answerable = positive class;
below 0.5 means the feature is higher for absent questions).

usage: python scripts/reader_null_probe.py OUT.json EVERY WEIGHTS.npz [WEIGHTS.npz ...] -- DIR QUESTIONS [DIR ...]
EVERY: every absent question, and every EVERY-th answerable one of each file (1: all), to keep a busy machine's run
short.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np


def passages(pairs: list[tuple[Path, Path]], every: int = 1) -> list[dict]:
    from rag.retrieve import RetrievalSettings, open_retriever
    from rag.studies.docs_eval import load_doc_questions

    out = []
    for folder, qfile in pairs:
        settings = replace(RetrievalSettings(), corpus=str(folder)).validated()
        retriever = open_retriever(settings)
        items = load_doc_questions(qfile)
        answerable = [it for it in items if it["type"] != "absent"][::every]
        items = [it for it in items if it["type"] == "absent" or it in answerable]
        hits = retriever.search_many([it["question"] for it in items], 5)
        for item, found in zip(items, hits):
            out.append(
                {
                    "folder": folder.name,
                    "id": item["id"],
                    "absent": item["type"] == "absent",
                    "question": item["question"],
                    "texts": [h.passage.text for h in found],
                }
            )
    return out


def summary(rows: list[dict], x: np.ndarray) -> dict:
    from sklearn.metrics import roc_auc_score

    from rag.answer.abstain import FEATURES, Abstainer

    model = Abstainer()
    absent = np.array([r["absent"] for r in rows])
    prob = np.array([model.probability_of(v) for v in x])
    out = {
        "questions": len(rows),
        "absent": int(absent.sum()),
        "abstained_absent": int((prob[absent] < model.threshold).sum()),
        "abstained_answerable": int((prob[~absent] < model.threshold).sum()),
        "auc_probability": round(float(roc_auc_score(~absent, prob)), 3),
    }
    for i, name in enumerate(FEATURES[:3]):
        out[f"auc_{name}"] = round(float(roc_auc_score(~absent, x[:, i])), 3)
        out[f"mean_{name}_absent"] = round(float(x[absent, i].mean()), 2)
        out[f"mean_{name}_answerable"] = round(float(x[~absent, i].mean()), 2)
    return out


def main(argv: list[str]) -> None:
    from rag.answer.abstain import evidence_features
    from rag.answer.reader import Reader
    from rag.answer.reading import readable
    from rag.encoders import minilm_query_encoder

    cut = argv.index("--")
    out, every, weights, rest = Path(argv[0]), int(argv[1]), argv[2:cut], argv[cut + 1 :]
    rows = passages([(Path(rest[i]), Path(rest[i + 1])) for i in range(0, len(rest), 2)], every)
    encode = minilm_query_encoder().encode
    result = {"passages": "the first 5 the default retriever returns", "every": every, "weights": {}}
    for w in weights:
        reader, xs = Reader(Path(w)), []
        for r in rows:
            texts = [p["text"] for p in readable([{"text": t} for t in r["texts"]])][:5]
            xs.append(evidence_features(r["question"], texts, reader.read(r["question"], texts), encode))
            print(w, r["id"], flush=True)
        result["weights"][w] = summary(rows, np.stack(xs))
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
