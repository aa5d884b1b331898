"""Chunking a document's blocks into passages: a chunk never crosses a heading or a page, a code block is never
split, and a passage holds at most about CHUNK_WORDS words."""

from __future__ import annotations

from rag.data.ingest import Block, parse_markdown

CHUNK_WORDS = 180  # a passage holds at most about this many words


def chunk_blocks(blocks: list[Block], max_words: int = CHUNK_WORDS) -> list[tuple[tuple[str, ...], int | None, str]]:
    """Group blocks into (heading path, page, text) chunks of at most about max_words words.

    A chunk never crosses a heading or a page. Blocks are joined whole; a code block is never split (an over-long
    one is a chunk of its own), an over-long text block is split at max_words.
    """
    chunks: list[tuple[tuple[str, ...], int | None, str]] = []
    parts: list[str] = []
    count, key = 0, None

    def flush():
        nonlocal parts, count
        if parts:
            chunks.append((*key, "\n\n".join(parts)))
        parts, count = [], 0

    for block in blocks:
        if (block.headings, block.page) != key:
            flush()
            key = (block.headings, block.page)
        n = len(block.text.split())
        if parts and count + n > max_words:
            flush()
        if block.kind == "code" or n <= max_words:
            parts.append(block.text)
            count += n
            continue
        words = block.text.split()
        for start in range(0, len(words), max_words):
            piece = words[start : start + max_words]
            if len(piece) == max_words:
                parts.append(" ".join(piece))
                flush()
            else:
                parts, count = [" ".join(piece)], len(piece)
    flush()
    return chunks


def chunk_markdown(text: str, max_words: int = CHUNK_WORDS) -> list[tuple[str, str]]:
    """(innermost heading, text) chunks of a markdown document (see chunk_blocks)."""
    return [
        (headings[-1] if headings else "", chunk)
        for headings, _, chunk in chunk_blocks(parse_markdown(text).blocks, max_words)
    ]
