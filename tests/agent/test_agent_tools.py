"""The embedding calculator gives exact values; the entity lookup and the langchain-core retriever adapter work."""

from __future__ import annotations

import pytest

from rag.agent.tools import (
    TitleLinker,
    adam_training_bytes,
    attention_flops_per_token,
    calculate,
    embedding_params,
    fmt_bytes,
    mlp_flops_per_token,
    param_bytes,
    sqrt_heuristic,
)
from rag.data.corpus import Passage


def test_exact_sizes_of_a_50k_by_768_table():
    n = embedding_params(50_000, 768)
    assert n == 38_400_000
    assert param_bytes(n, "fp16") == 76_800_000 and fmt_bytes(param_bytes(n, "fp16")) == "76.8 MB"
    assert param_bytes(n, "bf16") == 76_800_000
    assert param_bytes(n, "fp32") == 153_600_000 and fmt_bytes(153_600_000) == "153.6 MB"
    assert adam_training_bytes(n) == 614_400_000  # weights + gradients + m + v, 4 bytes each


def test_heuristic_and_flops():
    assert round(sqrt_heuristic(10_000)) == 150
    assert round(sqrt_heuristic(50_000)) == 335
    assert attention_flops_per_token(768, 1024) == 8 * 768 * 768 + 4 * 1024 * 768
    assert mlp_flops_per_token(768) == 16 * 768 * 768


@pytest.mark.parametrize(
    "question, kind, key, value",
    [
        ("How many parameters does a 50k×768 table have?", "params", "params", 38_400_000),
        ("how much memory does a 128k×4096 table take in fp16?", "bytes", "bytes_fp16", 1_048_576_000),
        ("How much memory does a 50,000 x 768 embedding table take in fp16?", "bytes", "bytes_fp16", 76_800_000),
        ("Training memory with Adam for a 50000 by 768 table?", "training_memory", "bytes", 614_400_000),
        ("What d does the 1.5·√V rule give for V = 10,000?", "sqrt_heuristic", "d", 150.0),
        ("attention and MLP FLOPs per token for d = 512 and T = 128", "flops", "mlp_flops", 16 * 512 * 512),
        (
            "What loss in nats does a model that predicts uniformly over 32,000 tokens have?",
            "uniform",
            "loss_nats",
            10.3735,
        ),
        ("Perplexity of guessing uniformly among 8 classes?", "uniform", "perplexity", 8),
        ("Entropy in bits of a uniform choice over 1k outcomes?", "uniform", "loss_bits", 9.9658),
    ],
)
def test_calculator_parses_questions(question, kind, key, value):
    result = calculate(question)
    assert result is not None and result.kind == kind
    assert result.values[key] == value


def test_calculator_answers_in_words_and_ignores_other_questions():
    text = calculate("how much memory does a 128k×4096 table take in fp16?").text
    assert "524,288,000" in text and "1,048,576,000 bytes" in text and "1.05 GB" in text
    assert "76.8 MB" in calculate("How many parameters does a 50k×768 table have?").text
    assert calculate("Who directed the film Ed Wood?") is None
    assert calculate("What does the embedding dimension control?") is None
    assert "10.82 nats" in calculate("Loss of a model predicting uniformly over a vocabulary of 50,257?").text
    assert calculate("Is uniform initialisation better for embedding tables?") is None  # no loss asked, no count


def test_title_linker_follows_mentions():
    passages = [
        Passage("Shirley Temple", "Shirley Temple", "An actress.", "t"),
        Passage("Kiss and Tell (1945 film)", "Kiss and Tell (1945 film)", "A film.", "t"),
        Passage("x", "Kiss and Tell (play)", "A play.", "t"),
    ]
    linker = TitleLinker(passages)
    text = "Kiss and Tell is a 1945 comedy starring 17-year-old Shirley Temple as Corliss Archer."
    assert linker.mentions(text) == ["Kiss and Tell (1945 film)", "x", "Shirley Temple"]
    assert linker.mentions(text, exclude={"x"}) == ["Kiss and Tell (1945 film)", "Shirley Temple"]
    assert linker.mentions("shirley temple in lower case is not a mention") == []


def test_langchain_retriever_adapter_returns_documents():
    from langchain_core.retrievers import BaseRetriever

    from rag.agent.tools import make_langchain_retriever
    from rag.retrieve import RetrievalSettings, Retriever

    retriever = make_langchain_retriever(Retriever.open(RetrievalSettings(retriever="bm25")), k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("How many bytes per parameter does fp16 use?")
    assert len(docs) == 3
    assert all(d.metadata["id"] and d.page_content for d in docs)
    assert any("fp16" in d.page_content for d in docs)


@pytest.mark.parametrize(
    "question",
    [
        "How many parameters does an embedding table with a vocabulary of 50,000 and dimension 768 have?",
        "V=50000, d=768: how many parameters?",
        "How many parameters in a 50k×768 table?",
        "What is the parameter count of a table with vocabulary size 50000 and embedding size 768?",
    ],
)
def test_calculator_reads_v_and_d_however_they_are_written(question):
    result = calculate(question)
    assert result and result.values["params"] == 38_400_000 and "38,400,000" in result.text


@pytest.mark.parametrize(
    "question, key, value",
    [
        ("How big is a 128000 by 4096 table in bf16?", "bytes_bf16", 1_048_576_000),
        ("How many bytes is a 50k×768 table in int8?", "bytes_int8", 38_400_000),
        ("How much memory does a 50k×768 table take in fp32?", "bytes_fp32", 153_600_000),
        ("How much memory does a 50k×768 table take in fp16?", "bytes_fp16", 76_800_000),
        ("How many bytes does an int8 vector of d=384 take?", "bytes_int8", 384),
        ("How many bytes does a float32 vector of dimension 384 take?", "bytes_fp32", 1536),
    ],
)
def test_calculator_bytes_for_every_dtype(question, key, value):
    result = calculate(question)
    assert result and result.kind in ("bytes", "vector_bytes") and result.values[key] == value, result and result.text


def test_a_query_is_never_cut_inside_a_word():
    from rag.agent.planner import MAX_QUERY_CHARS, rewrite_query
    from rag.config import clip_words

    long = "How do I install Zephyr with HTTP/2 support " + "and configuration options " * 20
    for attempt in range(4):
        q = rewrite_query(long + "?", attempt, [])
        assert len(q) <= max(MAX_QUERY_CHARS, len(long)) and all(w in (long + "?").lower() for w in q.lower().split())
    assert clip_words("install Zephyr with HTTP/2 support", 30, "…") == "install Zephyr with HTTP/2…"
    assert clip_words("short", 30) == "short"
    assert clip_words("supercalifragilistic", 5) == "supercalifragilistic"  # one long word stays whole


def test_a_second_part_after_a_preposition_is_its_own_question():
    from rag.agent.planner import split_parts

    assert split_parts("What are ALiBi's head slopes, and on what sequence length was the ALiBi paper trained?") == [
        "What are ALiBi's head slopes?",
        "on what sequence length was the ALiBi paper trained?",
    ]
    assert split_parts("Which index, and for which corpus size?") == ["Which index, and for which corpus size?"]


def test_the_whole_question_reaches_the_calculator_before_its_parts():
    from rag.agent.planner import plan_question

    # the second sentence alone reads as the weights' size (4.4 GB); with the first it is Adam's training state
    question = (
        "I'm planning to train a 1.1B-parameter model with AdamW in plain fp32. How much memory do the weights, "
        "gradients and optimizer states need, before activations?"
    )
    plan = plan_question(question)
    assert plan["calc"]["kind"] == "training_memory" and "17.6 GB" in plan["calc"]["text"]
    assert plan["calc"]["topic"] in plan["queries"]  # no single part gives the figure: its topic is searched
    # a two-part question whose part the calculator answers keeps that part's searches and marks it answered
    both = plan_question("How many parameters does a 50,000 × 768 embedding table have? Why are embeddings sparse?")
    if both["mode"] == "multi-part":
        assert both["calc"]["part"] in both["sub_questions"]
