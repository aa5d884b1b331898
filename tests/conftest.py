"""Shared test setup: real data from RAG_DATA_DIR, one embedding/model cache per session, a fresh index dir per test."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# Absolute, so that tests that change directory or start subprocesses still find the data (CI passes ../shared/data).
os.environ["RAG_DATA_DIR"] = str(Path(os.environ.get("RAG_DATA_DIR") or REPO.parent / "shared" / "data").resolve())
# Embeddings and the dequantized SmolLM2 are cached across tests (and across runs) outside the checkout.
os.environ["RAG_CACHE_DIR"] = os.environ.get("RAG_TEST_CACHE_DIR") or str(Path.home() / ".cache" / "rag-test")
# Nothing a test builds lands in the checkout's indexes/: session-wide builds go to a temporary folder, and each test
# gets its own (the index_dir fixture below).
os.environ["RAG_INDEX_DIR"] = tempfile.mkdtemp(prefix="rag-test-indexes-")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def wait_until(condition, timeout: float, what: str, poll: float = 0.05):
    """Poll condition() until it returns something truthy (and return that); fail after timeout seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(autouse=True)
def index_dir(tmp_path, monkeypatch) -> Path:
    """Every test gets its own empty RAG_INDEX_DIR."""
    path = tmp_path / "indexes"
    monkeypatch.setenv("RAG_INDEX_DIR", str(path))
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ["RAG_DATA_DIR"])
    if not (path / "scifact" / "corpus.jsonl").exists():
        pytest.fail(f"RAG_DATA_DIR={path} does not hold the data sets; set RAG_DATA_DIR=../shared/data")
    return path


@pytest.fixture(scope="session")
def scifact_small(data_dir):
    """A real SciFact subset: 20 judged queries, their relevant abstracts and 120 others."""
    from rag.data.corpus import load_corpus
    from rag.data.judgments import subset

    return subset(load_corpus("scifact"), n_queries=20, n_extra_docs=120, seed=0)


def write_beir(folder: Path, corpus, extra_qrels: str = "") -> Path:
    """Write a corpus (passages, queries, qrels) as a BEIR folder, so that it can be passed as --corpus PATH."""
    import json

    with open(folder / "corpus.jsonl", "w") as f:
        for p in corpus.passages:
            f.write(json.dumps({"_id": p.id, "title": p.title, "text": p.text}) + "\n")
    with open(folder / "queries.jsonl", "w") as f:
        for q in corpus.queries:
            f.write(json.dumps({"_id": q.id, "text": q.text}) + "\n")
    (folder / "qrels").mkdir()
    rows = [f"{q}\t{d}\t{s}" for q, rel in corpus.qrels.items() for d, s in rel.items()]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n" + extra_qrels)
    return folder


@pytest.fixture
def cli():
    """Invoke the real `rag` CLI in-process: cli(["search", "..."]) -> click Result."""
    from typer.testing import CliRunner

    from cli import app

    runner = CliRunner()
    return lambda args: runner.invoke(app, [str(a) for a in args])


def _wiki_slice(folder: Path, chars: int = 120_000) -> Path:
    """A small real corpus: the first `chars` characters of wiki-lm's train split (a quarter for valid/test)."""
    src = Path(os.environ["RAG_DATA_DIR"]) / "wiki-lm"
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        text = (src / f"wiki.{split}.raw").read_text(encoding="utf-8")
        (folder / f"wiki.{split}.raw").write_text(text[: chars if split == "train" else chars // 4], encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def wiki_slice(data_dir):
    """wiki_slice(folder, chars) writes a small real WikiText-layout corpus cut from wiki-lm and returns the folder."""
    return _wiki_slice
