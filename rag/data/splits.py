"""Which part of each benchmark trains the project's models and which part only evaluates them.

SQuAD v1.1 dev: the first TRAIN_ARTICLES articles in file order train the reader, the sentence ranker and the hop
classifier; the last EVAL_ARTICLES articles are read only by the answer evaluation. HotpotQA (BEIR layout): the first
HOTPOT_DEV queries are for development and training; the answer evaluation holds out the rest.
"""

from __future__ import annotations

import json

from rag.config import RagError, data_dir

TRAIN_ARTICLES = 40  # SQuAD dev articles, in file order, that training may see
EVAL_ARTICLES = 8  # the last articles: evaluation only
HOTPOT_DEV = 100  # the first HotpotQA queries are for development; the answer evaluation holds out the rest


def squad_articles(which: str) -> list[dict]:
    """SQuAD v1.1 dev articles: 'train' = the first TRAIN_ARTICLES, 'eval' = the last EVAL_ARTICLES."""
    path = data_dir() / "squad" / "dev-v1.1.json"
    if not path.exists():
        raise RagError(f"SQuAD not found at {path}; set RAG_DATA_DIR to the folder that holds squad/")
    articles = json.loads(path.read_bytes().decode("utf-8"))["data"]
    return articles[:TRAIN_ARTICLES] if which == "train" else articles[-EVAL_ARTICLES:]
