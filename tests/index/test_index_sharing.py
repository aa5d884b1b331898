"""Index folders sharing one cache, and concurrent updates: `rag index prune` in one index folder keeps
the cache entries another index folder needs, and three `rag index update` runs of one folder all finish."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag.index.spec import IndexSpec

REPO = Path(__file__).resolve().parents[2]


def write_docs(folder: Path, tag: str, n: int = 4) -> None:
    folder.mkdir(exist_ok=True)
    for i in range(n):
        (folder / f"d{i}.md").write_text(f"# Part {i}\n\nPart {i} of {tag} stores records in blocks of {i + 3} rows.\n")


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    shared = Path(os.environ["RAG_CACHE_DIR"])
    cache = tmp_path / "cache"  # pruning must never touch the shared test cache
    cache.mkdir()
    if (shared / "onnx").exists():
        (cache / "onnx").symlink_to(shared / "onnx")  # the exported model, not an embedding cache
    monkeypatch.setenv("RAG_CACHE_DIR", str(cache))
    return cache


def test_prune_in_one_index_folder_keeps_what_another_needs(own_cache, tmp_path, monkeypatch):
    from rag.data.corpus import load_corpus
    from rag.index.store import build_and_save
    from rag.index.update import prune
    from rag.retrieve import RetrievalSettings, open_retriever

    a_docs, b_docs = tmp_path / "a-docs", tmp_path / "b-docs"
    write_docs(a_docs, "alpha")
    write_docs(b_docs, "beta")
    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "b-indexes"))
    b = load_corpus(str(b_docs))
    build_and_save(b, IndexSpec("minilm", 16, "flat"))
    open_retriever(RetrievalSettings(corpus=str(b_docs), dim=16, retriever="hybrid"))  # builds B's BM25 too
    b_cache = sorted(p.name for p in (own_cache / "embeddings").glob("*-*"))
    assert b_cache

    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "a-indexes"))  # another index folder, the same cache
    build_and_save(load_corpus(str(a_docs)), IndexSpec("minilm", 16, "flat"))
    prune(keep=1)
    assert set(b_cache) <= {p.name for p in (own_cache / "embeddings").glob("*-*")}

    monkeypatch.setenv("RAG_INDEX_DIR", str(tmp_path / "b-indexes"))
    settings = RetrievalSettings(corpus=str(b_docs), dim=16, retriever="hybrid")
    assert open_retriever(settings, build_missing=False).search("records in blocks")


def test_three_concurrent_updates_all_finish(own_cache, tmp_path):
    docs = tmp_path / "docs"
    write_docs(docs, "gamma", n=6)
    env = {**os.environ, "RAG_INDEX_DIR": str(tmp_path / "indexes"), "PYTHONPATH": str(REPO)}
    cli = [sys.executable, str(REPO / "cli.py")]
    build = subprocess.run(
        [*cli, "index", "build", "--corpus", docs, "--dim", "16"], env=env, capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr
    (docs / "d0.md").write_text("# Part 0\n\nPart 0 was rewritten: it now stores logs in pages of 9 rows.\n")
    (docs / "d9.md").write_text("# Part 9\n\nA new part about queues.\n")
    runs = [
        subprocess.Popen(
            [*cli, "index", "update", "--corpus", docs, "--no-screen"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outs = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err for _, err in outs]
    assert not any("Traceback" in err or "FileNotFoundError" in err for _, err in outs)
    said = "".join(out + err for out, err in outs).replace("\n", " ")
    assert "waiting for another update, build or prune" in said
    assert said.count("updated") == 1 and said.count("up to date") == 2
