"""Sentences for the questions a span reader reads badly: why, "how is X related to Y", and questions whose words
name a passage's section heading.

The learned reader (rag.answer.reader) was trained on SQuAD, where every answer is a short span; it has never seen a
yes/no question (`kind` names one, for the sentence ranker's features), and for "why" or "how is X related to Y" it
tends to return a noun phrase from a sentence that only refers to the reason. These helpers rank whole sentences
instead, by the question's words found in the sentence (or, at a lower weight, in its passage's title) plus cue words
of the question's kind:
- why: causal cues (because, so, therefore, which is why, ...).
- relation: relational cues (both, the two, same, unlike, equals, "=", leads to, builds on, ...), with the equation
  just before the sentence when the sentence itself states none, and the sentence before one that refers back
  ("Dense retrieval does the same ..."); a set-up sentence ("Let E be ...") counts less, a conclusion
  ("so ...", "exactly", "give the same") more.
- heading_lead: the first sentence of a passage whose section heading the question names ("How do I choose nlist"
  and "Choosing nlist and nprobe").
- with_antecedent: a sentence that refers back ("the opposite profile", "This ...") with the sentence before it.
- naming_sentence: for "What do you call ...?" / "What is the name for ...?", the sentence that gives the name
  ("This is indirect prompt injection."), after the sentence that describes what the question describes.
"""

from __future__ import annotations

import re

from rag.lexicon import STOPWORDS, sentences, stem, words

_YES_NO = re.compile(
    r"^\s*(?:(?:if|when|once|suppose)\b[^,?]{0,120},\s*)?"  # "If I double a vector, does its cosine change?"
    r"(?:is|are|was|were|do|does|did|can|could|has|have|had|will|would|should|must)\b",
    re.I,
)
_WHY = re.compile(r"^\s*why\b|\bfor what reason\b", re.I)
_LINKED = r"(?:related|relate|relates|connected|connect|connects|linked|link|links|tied|tie|ties|associated)"
_RELATION = re.compile(
    r"\bhow\s+(?:is|are|does|do)\s+(?P<x>.+?)\s+" + _LINKED + r"\s+(?:to|with)\s+(?P<y>[^?]+)"
    r"|\bhow\s+(?:do|does|are)\s+(?P<x3>.+?)\s+and\s+(?P<y3>.+?)\s+" + _LINKED + r"\b"
    r"|\bwhat\s+(?:links|connects|ties|relates|joins)\s+(?P<x4>.+?)\s+(?:and|to|with)\s+(?P<y4>[^?]+)"
    r"|\bwhat\s+do\s+(?P<x5>.+?)\s+and\s+(?P<y5>.+?)\s+have\s+in\s+common\b"
    r"|\b(?:relation(?:ship)?|connection|link|tie|correspondence)s?\s+between\s+(?P<x2>.+?)\s+and\s+(?P<y2>[^?]+)",
    re.I,
)
_CAUSAL = re.compile(
    r"\b(?:because|since|so|therefore|thus|hence|due to|as a result|which is why|that is why|this is why|"
    r"caused by|leads? to|means?)\b",
    re.I,
)
_RELATIONAL = re.compile(
    r"\b(?:both|the two|same|similar|closer|equivalent|equals?|identity|function of|unlike|whereas|opposite|"
    r"shares?|implicitly|converts?|proportional|inverse|in contrast|special case|generali[sz]\w*|correspond\w*|"
    r"derived|in common|leads? (?:directly )?to|led (?:directly )?to|inspired|builds? on|built on|basis (?:of|for))\b|=",
    re.I,
)
# What points at the sentence before: a pronoun object after a preposition ("Without them, ..."), "this value".
_BACK_OBJECT = (
    r"^(?:without|with|for|from|by|unlike|like|besides|despite|beyond|after|before)\s+"
    r"(?:them|it|this|that|these|those|such \w+)\b"
    r"|\b(?:this|that|these|those) (?:value|number|figure|result|amount|loss|rate|size|cost|formula)s?\b"
)
_REFERS_BACK = re.compile(
    r"^(?:this|that|these|those|it|they|its|their|such|both|the two|the former|the latter)\b"
    r"|\bthe (?:opposite|same|former|latter|reverse)\b|" + _BACK_OBJECT,
    re.I,
)
# A sentence that cannot be read without the one before: a pronoun subject, "does the same", "this value". Narrower
# than _REFERS_BACK, since a relation states itself with "the same" ("a gather and the product give the same rows").
_POINTS_BACK = re.compile(
    r"^(?:this|that|these|those|it|they|its|their|such|the former|the latter)\b"
    r"|\b(?:do|does|did|doing) the (?:same|opposite|reverse)\b|" + _BACK_OBJECT,
    re.I,
)
_EQUATION = re.compile(r"\S\s*=\s*\S")
_SET_UP = re.compile(r"(?:let|suppose|consider|assume|denote|take)\b", re.I)
_CONCLUDES = re.compile(
    r"\b(?:so|thus|therefore|hence|exactly|give the same|gives the same|leads? (?:directly )?to)\b", re.I
)
SET_UP_COST = 1.5  # a relation's set-up sentence names both sides and states no relation
TITLE_WEIGHT = 0.5  # a question word found only in the passage's title counts this much
RANK_COST = 0.15  # the cost of each place further down the ranked passages


def _stems(text: str) -> list[str]:
    return [stem(w) for w in words(text)]


def _question_stems(question: str, drop: str = "") -> list[str]:
    skip = set(words(drop))
    return list(dict.fromkeys(stem(w) for w in words(question) if w not in STOPWORDS and len(w) > 1 and w not in skip))


def kind(question: str) -> str | None:
    """yes/no, why, relation, or None for the questions the reader answers itself."""
    if _RELATION.search(question):
        return "relation"
    if _WHY.search(question):
        return "why"
    if _YES_NO.match(question) and not re.search(r"\bor\b", question, re.I):
        return "yes/no"
    return None


def relation_sides(question: str) -> list[list[str]]:
    """The stems of X and Y in "how is X related to Y", without trailing qualifiers ("for unit vectors")."""
    m = _RELATION.search(question)
    if not m:
        return []
    out = []
    groups = [(m.group(f"x{i}"), m.group(f"y{i}")) for i in ("", "2", "3", "4", "5")]
    x, y = next(g for g in groups if g[0])
    for part in (x, y):
        part = re.sub(r"\s+(?:for|in|of|on|when|with)\s+.*$", "", part.strip())
        out.append(_question_stems(part))
    return [e for e in out if e]


def _candidates(passages: list[dict], limit: int):
    for rank, p in enumerate(passages[:limit]):
        title = set(_stems(str(p.get("title", ""))))
        for i, sent in enumerate(sentences(p["text"])):
            yield rank, p, i, sent, title


def _coverage(q: list[str], sent_stems: set[str], title: set[str]) -> tuple[float, float]:
    """(question words in the sentence, question words in the title only), each weighted 1."""
    in_sent = sum(1 for w in q if w in sent_stems)
    in_title = sum(1 for w in q if w not in sent_stems and w in title)
    return in_sent, in_title


def pick(question: str, passages: list[dict], limit: int = 5) -> dict | None:
    """{kind, sentence, passage} for a why or relation question: the best sentence of the first `limit`
    passages (see the module doc), or None when the question is of neither kind or no sentence shares enough of its
    words."""
    k = kind(question)
    if k not in ("why", "relation"):
        return None
    q = _question_stems(question)
    if not q:
        return None
    ents = relation_sides(question) if k == "relation" else []
    best = None
    for rank, p, i, sent, title in _candidates(passages, limit):
        sent_words = words(sent)
        sent_stems = {stem(w) for w in sent_words}
        in_sent, in_title = _coverage(q, sent_stems, title)
        if ents:  # a relation names both X and Y, in the sentence or its title
            if not all(any(w in sent_stems or w in title for w in e) for e in ents):
                continue
        elif in_sent < 1 or (in_sent + in_title) < 0.5 * len(q):
            continue
        score = in_sent + TITLE_WEIGHT * in_title - RANK_COST * rank - 0.01 * max(0, len(sent_words) - 30)
        if k == "why":
            score += 1.0 if _CAUSAL.search(sent) else 0.0
        elif k == "relation":
            score += min(3, len(set(m.lower() for m in _RELATIONAL.findall(sent))))
            score -= SET_UP_COST if _SET_UP.match(sent) else 0.0  # "Let E be ...": the set-up, not the relation
            score += 0.5 if _CONCLUDES.search(sent) else 0.0
            score += sum(1 for e in ents if sum(w in sent_stems for w in e) >= 2 / 3 * len(e))  # named in full
        if best is None or score > best[0]:
            best = (score, p, i, sent)
    if best is None:
        return None
    _, p, i, sent = best
    if k == "relation" and not _EQUATION.search(sent):
        before = [s for s in sentences(p["text"])[:i] if _EQUATION.search(s) and len(words(s)) <= 20]
        if before:
            sent = f"{before[-1]} {sent}"
    back = _REFERS_BACK if k == "why" else _POINTS_BACK
    before_it = sentences(p["text"])[i - 1] if i > 0 else ""
    if back.search(best[3]) and before_it and before_it not in sent:
        sent = f"{before_it} {sent}"  # "Dense retrieval does the same ...": what it refers to
    return {"kind": k, "sentence": sent, "passage": p}


def needs_sentence_before(sentence: str, before: str) -> bool:
    """Whether a sentence reads only with the one before it in its passage: it refers back ("This ...", "does the
    same"), or it states no equation and follows a short one ("‖a − b‖² = 2 − 2·cos(a, b)." then "Squared Euclidean
    distance is a decreasing linear function of cosine similarity.")."""
    if not before.strip():
        return False
    if _POINTS_BACK.search(sentence):
        return True
    return not _EQUATION.search(sentence) and bool(_EQUATION.search(before)) and len(words(before)) <= 20


def heading_lead(question: str, passages: list[dict], limit: int = 5) -> tuple[str, dict] | None:
    """(first sentence, passage) of the passage whose section heading ("Doc — Section") the question names: at least
    two of the heading's words and two thirds of them are question words. None when no heading is named."""
    q = set(_question_stems(question))
    best = None
    for rank, p in enumerate(passages[:limit]):
        title = str(p.get("title", ""))
        if " — " not in title:
            continue
        heading = [stem(w) for w in words(title.split(" — ", 1)[1]) if w not in STOPWORDS and len(w) > 1]
        hits = sum(1 for w in set(heading) if w in q)
        if hits >= 2 and hits >= 2 / 3 * len(set(heading)):
            first = sentences(p["text"])[:1]
            score = hits / len(set(heading)) - 0.1 * rank
            if first and (best is None or score > best[0]):
                best = (score, first[0], p)
    return (best[1], best[2]) if best else None


def with_antecedent(text: str, start: int, end: int) -> tuple[int, int]:
    """(start, end) of text[start:end] widened to the sentence before it when it refers back ("Dense retrieval has
    the opposite profile, which is why ..."): the antecedent holds what the sentence points at."""
    if not _REFERS_BACK.search(text[start:end]) or start == 0:
        return start, end
    from rag.answer.reader import sentence_around

    before = text[:start].rstrip()
    if not before or before.endswith(":") or before.endswith("\n\n"):
        return start, end
    a, _ = sentence_around(text, len(before) - 1, len(before) - 1)
    return (a, end) if text[a:start].strip() else (start, end)


_NAMING_Q = re.compile(
    r"\bwhat\s+(?:do|would|should)\s+(?:you|we|people|they|one)\s+call\b|\b(?:what(?:'s| is)|which is)\s+the\s+"
    r"(?:name|term|word)\s+for\b|\bwhat\s+is\s+(?:it|this|that)\s+called\b|\bhow\s+is\s+(?:it|this|that)\s+"
    r"called\b|\bis\s+there\s+a\s+(?:name|term)\s+for\b",
    re.I,
)
_NAMES = re.compile(
    r"^(?:this|that|it|such\s+\w+)\s+is\s+(?:called\s+|known\s+as\s+|termed\s+)?(?:an?\s+|the\s+)?\w"
    r"|\b(?:is|are)\s+(?:called|known\s+as|termed|referred\s+to\s+as|named)\b|\bso-called\b",
    re.I,
)


def naming_sentence(question: str, passages: list[dict], limit: int = 5) -> tuple[str, dict] | None:
    """(the described thing's sentence and the one that names it, passage) for a naming question ("What do you call
    the attack where ...?"): a sentence that names something ("This is indirect prompt injection.", "... is called
    X") scored by the question's words in it and in the sentence before it. None for other questions, or when no
    naming sentence shares two of the question's words."""
    if not _NAMING_Q.search(question):
        return None
    q = set(_question_stems(question)) - {"call", "name", "term", "word"}
    best = None
    for rank, p in enumerate(passages[:limit]):
        sents = sentences(p["text"])
        for i, sent in enumerate(sents):
            if not _NAMES.search(sent):
                continue
            before = sents[i - 1] if i > 0 and _REFERS_BACK.search(sent) else ""
            hits = len(q & set(_stems(sent + " " + before)))
            score = hits - RANK_COST * rank
            if hits >= 2 and (best is None or score > best[0]):
                best = (score, f"{before} {sent}".strip(), p)
    return (best[1], best[2]) if best else None
