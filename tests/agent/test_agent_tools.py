"""The entity lookup, the langchain-core retriever adapter and the planner's query tools work."""

from __future__ import annotations

from rag.agent.tools import TitleLinker
from rag.data.corpus import Passage


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


def test_a_two_part_question_searches_each_part():
    from rag.agent.planner import plan_question

    question = (
        "What does the embedding dimension control, and how does the parameter count of an embedding table grow with d?"
    )
    plan = plan_question(question)
    assert plan["mode"] == "multi-part" and plan["queries"] == plan["sub_questions"]
    assert plan["sub_questions"] == [
        "What does the embedding dimension control?",
        "how does the parameter count of an embedding table grow with d?",
    ]
