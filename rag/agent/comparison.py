"""Comparison questions: "How much better is A than B on M?", "Which is smaller, A or B?", "How does A compare
with B?". The answer is the sentence that states both figures, preferring one that names both A and B; when no
sentence names both, the best sentence with a figure for each, so that both numbers are given; when the passages
give no figure for one side, None (the reader's answer stands).

A sentence is scored by the sides it names (two thirds of a side's words), the metric words of the question it
holds, its figures and a comparative cue ("than", "times", "instead of", "vs"). Markdown table rows count as
sentences here ("SQ8: bytes per vector 384"), because comparisons are often tabulated.
"""

from __future__ import annotations

import re

from rag.agent.sentence_pick import RANK_COST, TITLE_WEIGHT, stem
from rag.agent.text import STOPWORDS, sentences, words

_COMPARATIVE = r"(?:\w+er|more|less|fewer|better|worse)"
_PATTERNS = [
    # how much better / faster / smaller is A than B (on M)?
    re.compile(
        r"\bhow\s+(?:much|many\s+times|many)\s+" + _COMPARATIVE + r"(?:\s+\w+)?\s+(?:is|are|does|do|was|were)\s+"
        r"(?P<a>.+?)\s+than\s+(?P<b>.+?)(?:\s+(?:on|for|at|in|when|with)\s+(?P<m>[^?]+))?\s*\??$",
        re.I,
    ),
    # which is smaller / takes less memory ..., A or B?
    re.compile(r"\bwhich\b(?P<m>[^,?]*?),?\s+(?P<a>[^,?]+?)\s+or\s+(?P<b>[^,?]+?)\s*\??$", re.I),
    # how does A compare with B (on M)?  A vs B?
    re.compile(
        r"\bhow\s+(?:does|do|did)\s+(?P<a>.+?)\s+compare\s+(?:to|with|against)\s+(?P<b>.+?)"
        r"(?:\s+(?:on|for|in)\s+(?P<m>[^?]+))?\s*\??$",
        re.I,
    ),
    re.compile(r"^(?P<a>[^?]+?)\s+(?:vs\.?|versus)\s+(?P<b>[^?]+?)(?:\s*[:,]\s*(?P<m>[^?]+))?\s*\??$", re.I),
]
_CUE = re.compile(
    r"\bthan\b|\btimes\b|\binstead of\b|\bvs\.?\b|\bversus\b|\bagainst\b|\bcompared\b|\bwhereas\b|\bwhile\b", re.I
)
_FIGURE = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*(?![A-Za-z\d])")  # a figure, not the 8 of "SQ8"


def _stems(text: str) -> list[str]:
    return list(dict.fromkeys(stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1))


def sides(question: str) -> tuple[list[str], list[str], list[str]] | None:
    """(A's stems, B's stems, the metric's stems) of a comparison question, or None when it is not one."""
    for pattern in _PATTERNS:
        m = pattern.search(question)
        if not m:
            continue
        a, b = _stems(m.group("a")), _stems(m.group("b"))
        if not a or not b:
            continue
        metric = _stems(m.group("m") or "")
        if not metric:  # "how much smaller is A than B": the comparative is the metric
            metric = [s for s in _stems(question) if s not in a and s not in b and s not in ("much", "which")]
        return a, b, [s for s in metric if s not in a and s not in b]
    return None


def _table_rows(text: str) -> list[str]:
    """Markdown table rows as sentences: "| SQ8 | 384 |" under "| index | bytes per vector |" -> "SQ8: bytes per
    vector 384"."""
    out, header = [], None
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if all(re.fullmatch(r":?-{2,}:?", c) for c in cells if c):
            continue
        if header is None:
            header = cells
            continue
        pairs = [f"{h} {v}" for h, v in zip(header[1:], cells[1:]) if v]
        out.append(f"{cells[0]}: {', '.join(pairs)}.")
    return out


def _names(side: list[str], stems: set[str]) -> bool:
    """Two thirds of the side's words, or its initials ("reciprocal rank fusion" and "RRF")."""
    initials = "".join(w[0] for w in side)
    return sum(w in stems for w in side) >= max(1, 2 / 3 * len(side)) or (len(side) >= 2 and initials in stems)


def compare(question: str, passages: list[dict], limit: int = 5) -> dict | None:
    """{kind: "comparison", sentence, passage, prefix} (see the module doc), or None when the question is not a
    comparison or no sentence names either side."""
    found = sides(question)
    if not found:
        return None
    a, b, metric = found
    scored = []
    for rank, p in enumerate(passages[:limit]):
        title = {stem(w) for w in words(str(p.get("title", "")))}
        for sent in sentences(p["text"]) + _table_rows(p["text"]):
            st = {stem(w) for w in words(sent)}
            has_a, has_b = _names(a, st), _names(b, st)
            if not (has_a or has_b):
                continue
            figures = len(_FIGURE.findall(sent))
            score = 1.5 * (has_a + has_b) + min(2, sum(w in st for w in metric))
            score += TITLE_WEIGHT * sum(w in title and w not in st for w in metric)
            score += (0.5 if figures else 0.0) + (0.5 if figures >= 2 and has_a and has_b else 0.0)
            score += (0.5 if _CUE.search(sent) else 0.0) - RANK_COST * rank - 0.01 * max(0, len(words(sent)) - 30)
            scored.append((score, has_a, has_b, sent, p))
    if not scored:
        return None
    scored.sort(key=lambda x: (-bool(_FIGURE.search(x[3])), -x[0]))  # the figures are the answer: they come first
    both = [x for x in scored if x[1] and x[2]]
    if both and (_FIGURE.search(both[0][3]) or not _FIGURE.search(scored[0][3])):
        return {"kind": "comparison", "sentence": both[0][3], "passage": both[0][4], "prefix": ""}
    best = scored[0]
    missing = 2 if best[1] else 1  # the side the best sentence does not name
    other = next((x for x in scored[1:] if x[missing] and not x[3 - missing] and _FIGURE.search(x[3])), None)
    if other is None or not _FIGURE.search(best[3]):
        return None  # no figure for each side: the reader's answer stands
    first, second = (best, other) if missing == 2 else (other, best)  # A's figure, then B's, as the question asks
    text = first[3] if first[4] is second[4] else f"{first[3]} [{first[4]['n']}]"
    return {"kind": "comparison", "sentence": f"{text} {second[3]}", "passage": second[4], "prefix": ""}
