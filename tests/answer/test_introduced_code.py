"""An answer sentence that ends with a colon brings the code block it introduces in its passage
(rag.answer.code_blocks.with_introduced_code), read from the real Requests documentation folder."""

from __future__ import annotations

import os

import pytest

from rag.answer.code_blocks import with_introduced_code

LEAD_IN = "you should use a pattern like this to save what is being streamed to a file:"


@pytest.fixture(scope="module")
def streamed_passage():
    from rag.data.corpus import load_corpus

    corpus = load_corpus(os.path.join(os.environ["RAG_DATA_DIR"], "docs", "requests"))
    found = [p for p in corpus.passages if LEAD_IN in " ".join(p.text.split())]
    assert found, "the Requests docs hold the streamed-download lead-in"
    return {"n": 2, "id": found[0].id, "title": found[0].title, "text": found[0].text}


def test_a_lead_in_brings_its_code_block(streamed_passage):
    answer = f"[1] In general, however, {LEAD_IN} [2]"
    out = with_introduced_code(answer, [streamed_passage])
    assert out.startswith(answer) and "iter_content" in out and out.count("```") == 2


def test_a_block_already_in_the_answer_or_a_sentence_without_colon_is_left_alone(streamed_passage):
    once = with_introduced_code(f"In general, however, {LEAD_IN} [2]", [streamed_passage])
    assert with_introduced_code(once, [streamed_passage]) == once
    plain = "Using Response.iter_content will handle a lot of what you would otherwise have to handle. [2]"
    assert with_introduced_code(plain, [streamed_passage]) == plain


def test_the_block_comes_from_the_cited_passage_only(streamed_passage):
    answer = f"In general, however, {LEAD_IN} [3]"  # cites a passage that is not there
    assert with_introduced_code(answer, [streamed_passage]) == answer
