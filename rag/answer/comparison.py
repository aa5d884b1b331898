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
from typing import NamedTuple

from rag.answer.sentence_pick import RANK_COST, TITLE_WEIGHT
from rag.lexicon import STOPWORDS, sentences, stem, words

_COMPARATIVE = r"(?:\w+er|more|less|fewer|better|worse)"
_PATTERNS = [
    # how much better / faster / smaller is A than B (on M)?
    re.compile(
        r"\bhow\s+(?:much|many\s+times|many)\s+" + _COMPARATIVE + r"(?:\s+\w+)?\s+(?:is|are|does|do|was|were)\s+"
        r"(?P<a>.+?)\s+than\s+(?P<b>.+?)(?:\s+(?:on|for|at|in|when|with)\s+(?P<m>[^?]+))?\s*\??$",
        re.I,
    ),
    # which is smaller / takes less memory ..., A or B?  which did better in the reference run: A or B?
    re.compile(r"\bwhich\b(?P<m>[^,?:]*?)[,:]?\s+(?P<a>[^,?:]+?)\s+or\s+(?P<b>[^,?:]+?)\s*\??$", re.I),
    # ...: A or B, which keeps more ...?
    re.compile(
        r"(?:^|[:;,.]\s+)(?:(?:just|simply|plain)\s+)?(?P<a>[^,?:;.]+?)\s+or\s+(?P<b>[^,?:;.]+?)\s*[,;:]\s*"
        r"which\b(?P<m>[^?]*)",
        re.I,
    ),
    # between A and B, which is milder?
    re.compile(r"\bbetween\s+(?P<a>[^,?]+?)\s+and\s+(?P<b>[^,?]+?)\s*,\s*which\b(?P<m>[^?]*)", re.I),
    # how does A compare with B (on M)?  A vs B?
    re.compile(
        r"\bhow\s+(?:does|do|did)\s+(?P<a>.+?)\s+compare\s+(?:to|with|against)\s+(?P<b>.+?)"
        r"(?:\s+(?:on|for|in)\s+(?P<m>[^?]+))?\s*\??$",
        re.I,
    ),
    re.compile(
        r"^(?P<a>[^?]+?)\s+(?:vs\.?|versus)\s+(?P<b>[^?]+?)(?:(?:\s*[:,]|\s+[-–—])\s*(?P<m>[^?]+))?\s*\??$", re.I
    ),
]
_CUE = re.compile(
    r"\bthan\b|\btimes\b|\binstead of\b|\bvs\.?\b|\bversus\b|\bagainst\b|\bcompared\b|\bwhereas\b|\bwhile\b", re.I
)
# a sentence that states a comparison: a comparative ("gentler", "slightly above", "keeps only ... while")
_COMPARES = re.compile(
    r"\b(?:more|less|fewer|better|worse|above|below|ahead|behind|outperform\w*|beats?|wins?|won|exceeds?|superior|"
    r"inferior|gentler|milder|smaller|larger|bigger|faster|slower|higher|lower|cheaper|simpler|stronger|weaker|"
    r"longer|shorter|greater|wider|narrower|closer|easier|harder|safer|lighter|heavier|denser|sparser|deeper|"
    r"keeps? only)\b|\b\w+er\s+than\b",
    re.I,
)
_COMPOUND = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")  # "all-but-the-top", "min-max": a name, hyphens and all
_POINTS_BACK = re.compile(r"^(?:it|this|these|they|such)\b", re.I)  # the sentence's subject is its passage's topic
_FIGURE = re.compile(r"(?<![A-Za-z\d])\d+(?:[.,]\d+)*(?![A-Za-z\d])")  # a figure, not the 8 of "SQ8"
_YEAR = re.compile(r"(?:19|20)\d\d")
_HOW_MUCH = re.compile(r"\bhow\s+(?:much|many|big|large|small|fast|slow)\b|\bby\s+how\s+much\b", re.I)


def figures_in(text: str) -> list[str]:
    """The figures a sentence states, without years ("Mu and Viswanath (2018)" measures nothing)."""
    return [f for f in _FIGURE.findall(text) if not _YEAR.fullmatch(f)]


def _stems(text: str) -> list[str]:
    return list(dict.fromkeys(stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 1))


_QUALIFIERS = frozenset("plain simple just simply regular ordinary basic standard full vanilla".split())


def _side(text: str) -> list[str]:
    """A side's stems without qualifiers ("plain BM25" is BM25); a hyphenated name ("all-but-the-top") first,
    whole, as one more stem."""
    stems = [w for w in _stems(text) if w not in _QUALIFIERS] or _stems(text)
    return _COMPOUND.findall(text.lower())[:1] + stems


def sides(question: str) -> tuple[list[str], list[str], list[str]] | None:
    """(A's stems, B's stems, the metric's stems) of a comparison question, or None when it is not one."""
    for pattern in _PATTERNS:
        m = pattern.search(question)
        if not m:
            continue
        a, b = _side(m.group("a")), _side(m.group("b"))
        if not a or not b:
            continue
        metric = _stems(m.group("m") or "")
        if not metric:  # "how much smaller is A than B": the comparative is the metric
            metric = [s for s in _stems(question) if s not in a and s not in b and s not in ("much", "which")]
        return a, b, [s for s in metric if s not in a and s not in b]
    return None


def _context(question: str, found: tuple) -> tuple[list[str], set[str]]:
    """(the question's other words, its figures): "64 dimensions on SciFact" says which table row and which run."""
    a, b, metric = found
    named = set(a) | set(b) | set(metric) | {"which", "one"}
    return [w for w in _stems(question) if w not in named and not w[0].isdigit()], set(figures_in(question))


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
    """Two thirds of the side's words, its initials ("reciprocal rank fusion" and "RRF"), or its hyphenated name."""
    if side and "-" in side[0] and side[0] in stems:
        return True
    words_ = [w for w in side if "-" not in w]
    initials = "".join(w[0] for w in words_)
    return sum(w in stems for w in words_) >= max(1, 2 / 3 * len(words_)) or (len(words_) >= 2 and initials in stems)


def compare(question: str, passages: list[dict], limit: int = 5) -> dict | None:
    """{kind: "comparison", sentence, passage} (see the module doc), or None when the question is not a
    comparison or no sentence names either side."""
    found = sides(question)
    if not found:
        return None
    a, b, metric = found
    context, asked_figures = _context(question, found)
    scored = []
    for rank, p in enumerate(passages[:limit]):
        title = {stem(w) for w in words(str(p.get("title", "")))}
        heading = {stem(w) for w in words(str(p.get("title", "")).split(" — ")[-1])}
        heading |= set(_COMPOUND.findall(str(p.get("title", "")).lower()))
        for sent in sentences(p["text"]) + _table_rows(p["text"]):
            st = {stem(w) for w in words(sent)} | set(_COMPOUND.findall(sent.lower()))
            has_a, has_b = _names(a, st), _names(b, st)
            if _POINTS_BACK.match(sent) and not (has_a or has_b):  # "It yields much smaller ...": the heading's
                has_a, has_b = _names(a, heading), _names(b, heading)
            if not (has_a or has_b):
                continue
            figures = figures_in(sent)
            compares = bool(_COMPARES.search(sent))
            metric_hits = sum(w in st for w in metric)
            score = 1.5 * (has_a + has_b) + min(2, metric_hits)
            score += TITLE_WEIGHT * sum(w in title and w not in st for w in metric)
            score += (0.5 if figures else 0.0) + (0.5 if len(figures) >= 2 and has_a and has_b else 0.0)
            score += (0.5 if _CUE.search(sent) else 0.0) - RANK_COST * rank - 0.01 * max(0, len(words(sent)) - 30)
            score += (1.5 if compares else 0.0) + min(2, len(asked_figures & set(figures)))
            score += 0.5 * min(3, sum(w in st or w in title for w in context))
            # its figures answer the question when they measure what it asks about (its metric, its figures)
            measured = bool(figures) and bool(metric_hits or asked_figures & set(figures) or _HOW_MUCH.search(question))
            scored.append(_Scored(score, has_a, has_b, sent, p, compares, measured))
    if not scored:
        return None
    scored.sort(key=lambda x: (-x.measured, -x.score))  # figures that measure what is asked are the answer: first
    both = [x for x in scored if x.has_a and x.has_b]
    if scored[0].measured:
        if both and both[0].measured:
            return _answer(both[0].sentence, both[0].passage)
        best = scored[0]
        # a sentence with a figure for the side the best one does not name
        other = next((x for x in scored[1:] if x.measured and (x.has_a, x.has_b) == (best.has_b, best.has_a)), None)
        if other is not None:
            first, second = (best, other) if best.has_a else (other, best)  # A's figure, then B's, as asked
            text = first.sentence if first.passage is second.passage else f"{first.sentence} [{first.passage['n']}]"
            return _answer(f"{text} {second.sentence}", second.passage)
    # no figure for each side: the best sentence that states the comparison ("A is gentler") or names both sides
    top = max(scored, key=lambda x: x.score)
    if top.compares or (top.has_a and top.has_b):
        return _answer(top.sentence, top.passage)
    return None  # the reader's answer stands


class _Scored(NamedTuple):
    score: float
    has_a: bool
    has_b: bool
    sentence: str
    passage: dict
    compares: bool  # it states a comparison ("gentler", "slightly above")
    measured: bool  # its figures measure what the question asks about


def _answer(sentence: str, passage: dict) -> dict:
    return {"kind": "comparison", "sentence": sentence, "passage": passage}
