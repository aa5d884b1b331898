"""The agent with the learned reader, on real retrievers: one round for a single fact, the reader's passage never
dropped, the span marked in its passage, a how-to answered with its code block whole."""

from __future__ import annotations

import pytest

from rag.agent import run_agent
from rag.answer.reader import reader_available

pytestmark = pytest.mark.skipif(not reader_available(), reason="reader weights or onnxruntime missing")


@pytest.fixture(scope="module")
def builtin_retriever(tmp_path_factory):
    from rag.retrieve import RetrievalSettings, Retriever

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAG_INDEX_DIR", str(tmp_path_factory.mktemp("reader-indexes")))
        return Retriever.open(RetrievalSettings(retriever="hybrid"))


def test_a_single_fact_takes_one_round_and_marks_its_span(builtin_retriever):
    result = run_agent("What is the vocabulary size of SmolLM2?", retriever=builtin_retriever)
    assert result["rounds"] == 1 and result["mode"] == "direct"
    assert "49,152" in result["answer"]
    assert result["spans"], result
    span = result["spans"][0]
    passage = builtin_retriever.corpus.passage_by_id[span["id"]]
    assert passage.text[span["start"] : span["end"]] == span["text"] and span["text"] in result["answer"]
    assert span["n"] in {c["n"] for c in result["citations"]}


def test_the_passage_the_reader_answers_from_is_kept(builtin_retriever):
    result = run_agent("What does d control?", retriever=builtin_retriever)
    assert "rewrite" not in [s["node"] for s in result["steps"]]  # no rewrite to the single word "control"
    kept = {r["id"] for r in result["retrieved"] if r["kept"]}
    assert {sp["id"] for sp in result["spans"]} <= kept and result["spans"]
    assert "anisotrop" not in result["answer"].lower()


def test_how_to_answers_with_the_code_block_intact(tmp_path):
    from rag.retrieve import RetrievalSettings, Retriever

    docs = tmp_path / "zephyr"
    docs.mkdir()
    (docs / "README.md").write_text(
        "# Zephyr\n\nZephyr is a small HTTP client for Python.\n\n## Installation\n\n"
        "Install Zephyr with HTTP/2 support:\n\n```bash\npip install 'zephyr-http[http2]'\n```\n\n"
        "Without the extra, Zephyr speaks HTTP/1.1 only.\n"
    )
    (docs / "usage.md").write_text(
        "# Usage\n\nCreate a client with `zephyr.Client()` and call `get(url)`. Timeouts default to 10 seconds.\n"
    )
    (docs / "faq.md").write_text("# FAQ\n\nZephyr supports proxies through the HTTPS_PROXY variable.\n")
    r = Retriever.open(RetrievalSettings(corpus=str(docs), retriever="hybrid"))
    result = run_agent("How do I install Zephyr with HTTP/2 support?", retriever=r)
    assert "```bash\npip install 'zephyr-http[http2]'\n```" in result["answer"]
    assert result["rounds"] == 1 and result["mode"] == "direct"
    assert result["citations"][0]["id"].startswith("README.md")


def test_a_definition_question_reads_its_documents_opening(builtin_retriever):
    from rag.agent.nodes import opening_lookups

    result = run_agent("What is anisotropy in embeddings?", retriever=builtin_retriever)
    assert "anisotropy-and-whitening.md#0" in {c["id"] for c in result["citations"]}
    # whether the first search already ranks the opening or a lookup adds it depends on MiniLM's int8 rounding, which
    # differs by CPU; the lookup itself: the opening of the document that holds most hits, when the search missed it
    question, opening = "What is anisotropy in embeddings?", "anisotropy-and-whitening.md#0"
    ids = ["anisotropy-and-whitening.md#2", "faiss-hnsw.md#1", "anisotropy-and-whitening.md#3"]
    by_id = {pid: object() for pid in ids + [opening]}
    assert opening_lookups(question, ids, {}, by_id) == [
        {"source": "opening of anisotropy-and-whitening.md", "ids": [opening], "tier": 0}
    ]
    assert opening_lookups(question, ids, {opening: by_id[opening]}, by_id) == []  # found already
    assert opening_lookups("Who wrote the HNSW paper?", ids, {}, by_id) == []  # not a definition question


def test_what_is_bm25_keeps_its_passages_and_carries_no_screen_warning(builtin_retriever):
    """The built-in corpus's BM25 pages (a formula, a benchmark figure) are documentation, not orders to a model."""
    from rag.agent import run_agent

    result = run_agent("What is BM25?", retriever=builtin_retriever)
    assert result["warnings"] == [], result["warnings"]
    assert "0.662" in result["answer"] and any(c["id"].startswith("bm25.md#") for c in result["citations"])


def test_the_ranker_training_records_the_answer_step_the_agent_runs(builtin_retriever):
    """`rag train sentences` learns from what the agent's answer step reads: its recorder must take every argument
    the step passes, or the agent falls back to a plain backend and the recorder sees nothing."""
    from rag.answer.reader import default_reader
    from rag.training.sentence_rank_fit import _Recorder

    backend = _Recorder(builtin_retriever.encoder.encode, default_reader())
    result = run_agent("What is the vocabulary size of SmolLM2?", retriever=builtin_retriever, backend=backend)
    assert not any("failed" in w for w in result["warnings"]), result["warnings"]
    question, passages, text, reserve = backend.last
    assert question == "What is the vocabulary size of SmolLM2?" and passages and "49,152" in text
    assert isinstance(reserve, list)
