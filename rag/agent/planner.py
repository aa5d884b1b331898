"""Rule-based planning for the agent: direct vs multi-part vs multi-hop, sub-questions, second-hop and rewrite queries.

- multi-part: "What does the embedding dimension control, and how does the parameter count of an embedding table
  grow with d?" → two independent sub-questions searched together in one round.
- multi-hop (comparison): "Were Scott Derrickson and Ed Wood of the same nationality?" → one sub-question
  per entity, searched together with the whole question.
- multi-hop (bridge): "What position was held by the woman who portrayed Corliss Archer in Kiss and Tell?" →
  first the inner description ("the woman who portrayed ..."), then the outer question with what the first hop
  found (titles and entities of the first-hop passages) put in its place.
"""

from __future__ import annotations

import re

from rag.config import clip_words
from rag.lexicon import STOPWORDS, content_words, entities

# "..., and how ...", "...; what ...", "...? Is ...", also after a preposition: "..., and on what length ..."
_PART_SPLIT = re.compile(
    r"(?:,\s*(?:and|but)\s+|;\s*|\?\s+|\.\s+(?=[A-Z]))"
    r"(?=(?:(?:on|in|at|for|from|to|by|with|of|under|over|after|before)\s+(?=what|which|whom|whose|how))?"
    r"(?:what|how|which|who|whom|whose|when|where|why|is|are|does|do|did|can|could|should|was|were)\b)",
    re.IGNORECASE,
)
_COMPARE = re.compile(
    r"\b(both|same|either|neither|older|younger|first|earlier|later|larger|smaller|bigger|more|"
    r"less|fewer|longer|shorter|share|shared|common|taller|higher|lower|closer|further|farther|newer|oldest|youngest)\b",
    re.IGNORECASE,
)
# "the <noun phrase> who/which/that ..." - the description of the bridge entity, up to the end of the clause.
_RELATIVE = re.compile(
    r"\b((?:the|a|an|this)\s+(?:[\w'’-]+\s+){0,5}?(?:who|whom|whose|which|that|where)\s+[^,?]+)", re.IGNORECASE
)
# "the <role> of <something>" nested descriptions, e.g. "the director of the film Titanic".
_OF_CHAIN = re.compile(
    r"\b(the\s+(?:[\w'’-]+\s+){0,2}?of\s+(?:the\s+)?(?:[\w'’.-]+\s*){1,8}?)(?=[,?]|$)", re.IGNORECASE
)
MULTIHOP_MIN_WORDS = 4  # a question naming an entity with at least this many content words is planned as multi-hop
LONG_QUESTION_WORDS = 10  # a question this long is planned as multi-hop even without a named entity
HOP_FROM = 3  # second-hop queries are built from this many first-hop passages
MAX_QUERY_CHARS = 200  # a rewritten query is cut at a word boundary to this length


def split_parts(question: str) -> list[str]:
    parts = [p.strip(" ,;") for p in _PART_SPLIT.split(question) if p and p.strip(" ,;")]
    parts = [p if p.endswith("?") else p + "?" for p in parts]
    return parts if len(parts) > 1 and all(len(content_words(p)) >= 2 for p in parts) else [question]


def plan_question(question: str) -> dict:
    """Return {mode, sub_questions, queries (first searches), extra_queries (searched alongside, ranked after
    lookups), bridge_template, hop (whether a second hop follows the first search)} for a question."""
    parts = split_parts(question)
    plan = {
        "mode": "direct",
        "sub_questions": [],
        "queries": [question],
        "extra_queries": [],
        "bridge_template": None,
        "hop": False,
        "hop_reason": None,  # comparison | bridge | chain | long: why a second hop is planned (rag.agent.multihop decides whether it runs)
    }
    if len(parts) > 1:
        # independent parts; a second hop only when the question names entities to follow
        return {
            **plan,
            "mode": "multi-part",
            "sub_questions": parts,
            "queries": parts,
            "hop": bool(entities(question)),
            "hop_reason": "long" if entities(question) else None,
        }
    ents = [x for e in entities(question) for x in re.split(r"\s+(?:and|or)\s+", e) if x]
    words = content_words(question)
    if len(ents) >= 2 and (_COMPARE.search(question) or re.search(r"\bor\b", question)):
        ent_words = {w for e in ents[:2] for w in content_words(e)}
        predicate = " ".join(w for w in words if w not in ent_words)
        subs = [f"{e} {predicate}".strip() for e in ents[:2]]
        return {
            **plan,
            "mode": "multi-hop",
            "sub_questions": subs,
            "extra_queries": subs,
            "hop": True,
            "hop_reason": "comparison",
        }
    relative = _RELATIVE.search(question)
    match = relative or _OF_CHAIN.search(question)
    if match and len(content_words(match.group(1))) >= 2:
        inner = match.group(1).strip()
        outer = (question[: match.start(1)] + "{bridge}" + question[match.end(1) :]).strip()
        return {
            **plan,
            "mode": "multi-hop",
            "sub_questions": [inner, outer],
            "bridge_template": outer,
            "hop": True,
            # a relative clause ("the woman who portrayed ...") names a bridge entity to find first; an "of" chain
            # ("the function of the TARDIS") usually does not
            "hop_reason": "bridge" if relative else "chain",
        }
    if (ents and len(words) >= MULTIHOP_MIN_WORDS) or len(words) >= LONG_QUESTION_WORDS:
        return {**plan, "mode": "multi-hop", "sub_questions": [question], "hop": True, "hop_reason": "long"}
    return plan


def bridge_queries(question: str, sub_questions: list[str], template: str | None, kept) -> list[str]:
    """Second-hop queries: for each of the best first-hop passages, the (outer) question plus what it found."""
    queries = []
    q_words = set(content_words(question))
    for p in kept[:HOP_FROM]:
        new_ents = [e for e in entities(p.text) if not set(content_words(e)) <= q_words and e != p.title][:3]
        base = question  # measured on HotpotQA: the whole question beats the filled-in template (0.937 vs 0.927, BM25)
        if p.title.lower() not in base.lower():
            base = f"{base} {p.title}"
        queries.append(f"{base} {' '.join(new_ents)}".strip())
    return list(dict.fromkeys(queries))


def rewrite_query(question: str, attempt: int, sub_questions: list[str]) -> str:
    """A reformulation for the attempt-th rewrite: keywords, then entities and rare words, then sub-questions."""
    words = content_words(question)
    if attempt == 0 and words:
        return " ".join(words)
    if attempt == 1:
        ents = entities(question)
        long_words = sorted(words, key=len, reverse=True)[:4]
        lowered = {e.lower() for e in ents}
        candidate = " ".join(ents + [w for w in long_words if not any(w in e for e in lowered)])
        if candidate:
            return candidate
    if sub_questions and attempt - 2 < len(sub_questions):
        return sub_questions[max(0, attempt - 2)]
    return clip_words(" ".join(w for w in words if w not in STOPWORDS), MAX_QUERY_CHARS) or question


def nothing_found_answer(question: str) -> str:
    return "I found no passage in the corpus that answers this question, so I will not guess."
