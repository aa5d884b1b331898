"""Fenced code blocks in passages, for answers that give the code the documentation gives: the block that best
matches a how-to question (code_block), and the block a quoted lead-in sentence introduces (with_introduced_code)."""

from __future__ import annotations

import re

from rag.lexicon import overlap

FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[^\n]*$", re.S | re.M)


def code_block(question: str, passages: list[dict]) -> tuple[dict, str, str] | None:
    """(passage, the sentence that introduces the block, the block) for the fenced code block that best matches
    the question in these passages (best first); None when they hold none."""
    best = None
    for rank, p in enumerate(passages):
        for m in FENCE.finditer(p["text"]):
            before = p["text"][: m.start()].strip().split("\n\n")[-1].strip()
            score = overlap(question, before + " " + m.group(2) + " " + p["title"]) - 0.05 * rank
            if best is None or score > best[0]:
                best = (score, p, before, m.group(0).strip())
    if best is None or best[0] <= 0:
        return None
    return best[1], best[2], best[3]


# An answer sentence that ends with a colon, then its citation: "... save what is being streamed to a file: [2]"
_LEAD_IN = re.compile(r"(?P<sentence>[^\n]*?\S:)[ \t]*\[(?P<n>\d+)\](?=[ \t]*(?:\n|$|[^\[]))")
LEAD_IN_WORDS = 6  # the end of the sentence that is looked up in its passage (the answer may have reflowed it)


def with_introduced_code(text: str, passages: list[dict]) -> str:
    """The answer with the code block each lead-in introduces: a quoted sentence that ends with a colon and is
    followed in its passage by a fenced code block ("In general, you should use a pattern like this to save what is
    being streamed to a file:") says that the block is what it means, so the block is added after the sentence's
    citation. Each block is added once, and not when the answer already holds it."""
    by_n = {p.get("n"): p for p in passages if isinstance(p.get("text"), str)}
    out, last = [], 0
    for m in _LEAD_IN.finditer(text):
        p = by_n.get(int(m.group("n")))
        block = introduced_block(m.group("sentence"), p["text"]) if p else None
        if block and block not in text and block not in "".join(out):
            out += [text[last : m.end()], f"\n\n{block}\n\n"]
            last = m.end()
    return ("".join(out) + text[last:]).strip() if out else text


def introduced_block(sentence: str, passage: str) -> str | None:
    """The fenced code block that directly follows the sentence's last LEAD_IN_WORDS words in the passage."""
    tail = CITATION.sub(" ", sentence).split()[-LEAD_IN_WORDS:]
    if len(tail) < 3:
        return None
    at = re.search(r"\s+".join(map(re.escape, tail)), passage)
    if not at:
        return None
    after = at.end() + len(passage[at.end() :]) - len(passage[at.end() :].lstrip())  # the next non-blank character
    block = FENCE.match(passage, after)
    return block.group(0).strip() if block else None


CITATION = re.compile(r"\[\d+\]")
