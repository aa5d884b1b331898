"""Bounded resources: passages of bounded length, whatever the input.

A 50 MB file that is one "word" once became one passage that took 3.3 GB to tokenize. Every loader passes its
passages through `cap_passages`: a run of non-space characters over MAX_TOKEN_CHARS is cut, a text over
MAX_PASSAGE_CHARS is split at spaces (the first part keeps the id, the others are `<id>~<n>`), and one RagWarning
says how many were changed. Real data is untouched: the longest SciFact text is 10,000 characters and its longest
token 80 (HotpotQA: 8,237 and 60).
"""

from __future__ import annotations

import dataclasses
import re
import warnings

from rag.config import RagWarning

MAX_TOKEN_CHARS = 128
MAX_PASSAGE_CHARS = 16_000
GIANT_TOKEN = re.compile(r"\S{%d,}" % (MAX_TOKEN_CHARS + 1))


def split_text(text: str, limit: int = MAX_PASSAGE_CHARS) -> list[str]:
    """Parts of at most `limit` characters, split at the last space before the limit where there is one."""
    parts, start = [], 0
    while start < len(text):
        end = start + limit
        if end < len(text):
            space = text.rfind(" ", start, end)
            end = space if space > start else end
        parts.append(text[start:end].strip())
        start = end
    return [p for p in parts if p]


def cap_passages(passages: list) -> list:
    """The passages (dataclasses with .id and .text) with giant tokens cut and long texts split; warns with counts."""
    out, note = capped(passages)
    if note:
        warnings.warn(note, RagWarning, stacklevel=2)
    return out


def capped(passages: list) -> tuple[list, str]:
    """(cap_passages' result, the line that says what was cut and split, or "" when nothing was)."""
    out, cut, split = [], 0, 0
    for p in passages:
        text, n = p.text, 0
        if max(map(len, text.split()), default=0) > MAX_TOKEN_CHARS:  # str.split runs in C; the regex only when needed
            text, n = GIANT_TOKEN.subn(lambda m: m.group()[:MAX_TOKEN_CHARS], text)
        cut += n
        if len(text) <= MAX_PASSAGE_CHARS:
            out.append(dataclasses.replace(p, text=text) if n else p)
            continue
        split += 1
        out += [
            dataclasses.replace(p, id=p.id if i == 0 else f"{p.id}~{i + 1}", text=part)
            for i, part in enumerate(split_text(text))
        ]
    note = ""
    if cut or split:
        note = (
            f"{cut:,} tokens over {MAX_TOKEN_CHARS} characters were cut and {split:,} passages over "
            f"{MAX_PASSAGE_CHARS:,} characters were split ({len(out):,} passages now)"
        )
    return out, note
