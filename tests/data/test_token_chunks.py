"""Chunks cut by MiniLM's own token count: every passage fits the 256-token window with its title and heading path,
no word is split, a long text overlaps its neighbour, a long code block is cut at line ends and stays fenced; a
folder read with chunking "tokens" holds no passage past the window."""

from __future__ import annotations

import pytest

from rag.data.corpus import load_folder
from rag.data.ingest import Block
from rag.data.token_chunks import WINDOW, chunk_by_tokens, encoder_tokenizer, title_for
from rag.encoders.base import document_text
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


def test_a_folder_reads_as_passages_that_fit_the_window_each_under_its_title_and_heading_path(tmp_path, tokenizer):
    """A folder read with chunking "tokens": no passage past the encoder's window, a long code block cut at its
    lines, and each passage titled with the page title and heading path the encoder reads first."""
    code = "\n".join(f"    result_{i} = client.get('/items/{i}', params={{'q': {i}}})" for i in range(120))
    (tmp_path / "guide.md").write_text(
        "# Widget Guide\n\nShort intro.\n\n## Install\n\n### From source\n\n"
        + PROSE
        + "\n\n```python\n"
        + code
        + "\n```\n\n## Usage\n\nCall widget.run() once.\n"
    )
    (tmp_path / "notes.txt").write_text(PROSE + "\n\n" + "A second, short paragraph.\n")
    corpus = load_folder(tmp_path, chunking="tokens")
    tokens = [len(e.ids) for e in tokenizer.encode_batch([document_text(p) for p in corpus.passages])]
    assert len(corpus.passages) > 6 and max(tokens) <= WINDOW  # [CLS] and [SEP] counted
    guide = [p for p in corpus.passages if p.source == "guide.md"]
    titles = {p.heading: p.title for p in guide}
    assert titles["Widget Guide › Install › From source"] == "Widget Guide — Install › From source"
    assert titles["Widget Guide › Usage"] == "Widget Guide — Usage"
    assert all(document_text(p).startswith(p.title + "\n") for p in corpus.passages)
    pieces = [p.text for p in guide if "result_" in p.text]
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.startswith("```python\n") and piece.endswith("\n```")
        assert set(piece.splitlines()[1:-1]) <= set(code.splitlines())  # whole lines, none cut
    assert [line for piece in pieces for line in piece.splitlines()[1:-1]] == code.splitlines()  # all, in order
    notes = [p for p in corpus.passages if p.source == "notes.txt"]
    assert len(notes) > 1 and len({p.title for p in notes}) == 1 and notes[0].title  # a long paragraph, cut
    assert encoder_tokenizer()[1] == WINDOW  # the window is the packaged model's max_seq_length
