"""Fenced code blocks in passages, for answers that give the code the documentation gives: the block that best
matches a how-to question (code_block)."""

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
