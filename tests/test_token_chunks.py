"""Chunks cut by MiniLM's own token count: every passage fits the 256-token window with its title and heading path,
no word is split, a long text overlaps its neighbour, a long code block is cut at line ends and stays fenced."""

from __future__ import annotations

import pytest

from rag.data.ingest import Block
from rag.data.token_chunks import WINDOW, chunk_by_tokens, title_for
from rag.models import minilm_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return minilm_tokenizer()


def tokens(tokenizer, title, headings, text):
    return len(tokenizer.encode(title_for(title, headings) + "\n" + text).ids)


PROSE = " ".join(f"Initialize the MultiDatasetBatchSampler number {i}, then call fit()." for i in range(120))
CODE = "```python\n" + "\n".join(f"value_{i} = compute(value_{i - 1}, factor={i})" for i in range(1, 200)) + "\n```"


def test_every_chunk_fits_the_window_with_its_title_and_heading_path(tokenizer):
    headings = ("Training", "Samplers")
    blocks = [Block("Short intro.", headings), Block(PROSE, headings), Block(CODE, headings, "code")]
    chunks = chunk_by_tokens(blocks, "Guide", tokenizer)
    assert len(chunks) > 4
    assert all(tokens(tokenizer, "Guide", h, text) <= WINDOW for h, _, text in chunks)
    assert {h for h, _, _ in chunks} == {headings}


def test_no_word_is_split_and_a_cut_text_overlaps_its_neighbour(tokenizer):
    pieces = [text for _, _, text in chunk_by_tokens([Block(PROSE)], "Guide", tokenizer)]
    words = set(PROSE.split())
    assert len(pieces) > 1 and all(set(p.split()) <= words for p in pieces)
    assert all(a.split()[-1] in b.split()[:40] for a, b in zip(pieces, pieces[1:]))  # the overlap
    assert "Initial ize" not in " ".join(pieces)


def test_a_long_code_block_is_cut_at_line_ends_and_stays_fenced(tokenizer):
    pieces = [text for _, _, text in chunk_by_tokens([Block(CODE, (), "code")], "Guide", tokenizer)]
    lines = set(CODE.splitlines())
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.startswith("```python\n") and piece.endswith("\n```")
        assert set(piece.splitlines()) <= lines


def test_chunks_never_cross_a_heading_or_a_page(tokenizer):
    blocks = [Block("One.", ("A",)), Block("Two.", ("B",)), Block("Three.", ("B",), page=2)]
    assert [(h, p, t) for h, p, t in chunk_by_tokens(blocks, "Doc", tokenizer)] == [
        (("A",), None, "One."),
        (("B",), None, "Two."),
        (("B",), 2, "Three."),
    ]
    assert title_for("Doc", ("Doc", "Install")) == "Doc — Install"
