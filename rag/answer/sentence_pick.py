"""Sentences for the questions a span reader reads badly: yes/no, why, "how is X related to Y", and questions whose
words name a passage's section heading.

The learned reader (rag.answer.reader) was trained on SQuAD, where every answer is a short span; it has never seen a
yes/no question, and for "why" or "how is X related to Y" it tends to return a noun phrase from a sentence that only
refers to the reason. These helpers rank whole sentences instead, by the question's words found in the sentence
(or, at a lower weight, in its passage's title) plus cue words of the question's kind:
- yes/no: a negation bound to a question word that is not the passage's topic ("RoPE has no parameters", "which
  is undefined") answers "No — ..."; otherwise the sentence alone (never a bare "Yes": sharing the question's
  words does not make a sentence say that its subject has the property).
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
# "Can I ...", "Could one ...", "Is it possible to ...", "Does X support ...": a question about (in)ability
_ABILITY_Q = re.compile(
    r"^\s*(?:can|could)\s+(?:i|we|you|one|they|it|\w+(?:\s+\w+){0,4}?\s+be)\s+(?P<verb>\w+)"
    r"|^\s*is\s+(?:it|there\s+a\s+way)\s+(?:\w+\s+)?(?:possible|able)?\s*to\s+(?P<verb2>\w+)"
    r"|^\s*(?:does|do|can|will)\s+.+?\b(?P<verb3>support|allow|permit|handle|accept|enable)s?\b",
    re.I,
)
_INABILITY = re.compile(
    r"\bnot\s+(?:be\s+)?(?:supported|possible|allowed|available|able)\b|\bunsupported\b|\bcannot\b|\bcan't\b"
    r"|\bcan\s+not\b|\bcould\s+not\b|\bimpossible\b|\bunable\b|\bno\s+way\b|\b(?:does|do)\s+not\s+support\b"
    r"|\b(?:doesn't|don't)\s+support\b",
    re.I,
)
_ABILITY = re.compile(r"\b(?:can|could|supports?|supported|possible|allows?|lets?|able to|enables?)\b", re.I)
_NEGATION = frozenset("no not never nothing none neither nor cannot without".split())
_NEG_PREFIXES = ("un", "non", "in", "im")
_QUESTION_NEGATION = re.compile(r"\b(?:not|no|never)\b|n't\b", re.I)
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


def _negated(sent_words: list[str], q_stems: set[str], title: set[str]) -> bool:
    """Whether a negation is bound to a question word that is not the passage's topic (a title word): 'no
    (trainable) parameters', 'does not add', 'adds nothing', 'undefined'. 'No position information' in a passage
    titled "Rotary Position Embeddings" negates something else."""
    predicate = q_stems - title
    for i, w in enumerate(sent_words):
        if any(w.startswith(p) and stem(w[len(p) :]) in predicate for p in _NEG_PREFIXES if len(w) > len(p) + 3):
            return True
        if stem(w) in predicate:
            before = sent_words[max(0, i - 2) : i]  # "no (trainable) parameters", "does not add"
            after = sent_words[i + 1 : i + 2]  # "adds nothing"; not "exact search, not with ..."
            if any(x in _NEGATION or x.endswith("n't") for x in before) or any(x in ("nothing", "none") for x in after):
                return True
    return False


def _asserts(sent_words: list[str], q_stems: set[str]) -> bool:
    """Whether the sentence states a question word as a property: "is exact", "are (not) trainable"."""
    for i, w in enumerate(sent_words[1:], 1):
        base = next((w[len(x) :] for x in _NEG_PREFIXES if w.startswith(x) and stem(w[len(x) :]) in q_stems), w)
        if stem(base) in q_stems and sent_words[i - 1] in ("is", "are", "was", "were", "be", "not"):
            return True
    return False


def ability_verb(question: str) -> str | None:
    """The verb of a question about (in)ability: "Can I delete ..." -> 'delete', "Is it possible to shrink ..." ->
    'shrink', "Does X support Y" -> 'support'; None for other questions."""
    m = _ABILITY_Q.search(question)
    if not m:
        return None
    verb = m.group("verb") or m.group("verb2") or m.group("verb3")
    return verb.lower() if verb and verb.lower() not in STOPWORDS else None


# verbs that ask for the same ability: "Can I remove vectors?" is answered by "Deletion is not supported"
_SAME_ABILITY = (
    ("remove", "delete", "deletion", "erase", "drop"),
    ("add", "insert", "append"),
    ("change", "modify", "update", "edit", "alter"),
    ("shrink", "reduce", "truncate", "cut", "compress"),
    ("grow", "extend", "enlarge", "extrapolate"),
    ("run", "execute", "use"),
    ("save", "store", "persist", "write"),
    ("load", "read", "open"),
)


def _same_verb(verb: str, sent_words: list[str]) -> bool:
    """Whether the sentence uses the verb, a word of its family ("delete", "deleted", "deletion") or a verb that
    asks for the same ability (_SAME_ABILITY)."""
    family = next((group for group in _SAME_ABILITY if verb.lower() in group), (verb,))
    roots = [r for r in (stem(v)[:5] for v in family) if len(r) >= 3]
    return any(stem(w).startswith(root) for w in sent_words for root in roots)


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
    """{kind, sentence, passage, prefix} for a yes/no, why or relation question: the best sentence of the first
    `limit` passages (see the module doc), or None when the question is of none of these kinds or no sentence
    shares enough of its words."""
    k = kind(question)
    if k is None:
        return None
    q = _question_stems(question)
    if not q:
        return None
    q_set = set(q)
    ents = relation_sides(question) if k == "relation" else []
    verb = ability_verb(question) if k == "yes/no" else None
    best = None
    for rank, p, i, sent, title in _candidates(passages, limit):
        sent_words = words(sent)
        sent_stems = {stem(w) for w in sent_words}
        if k == "yes/no":  # "undefined" mentions "defined": the predicate, negated
            sent_stems |= {stem(w[len(x) :]) for w in sent_words for x in _NEG_PREFIXES if w.startswith(x)} & q_set
        if verb:  # "deletion" covers "delete": the verb's family counts as the question's word
            sent_stems |= {w for w in q_set if len(w) >= 5 and _same_verb(w, sent_words)}
        in_sent, in_title = _coverage(q, sent_stems, title)
        negated = k == "yes/no" and _negated(sent_words, q_set, title)
        if ents:  # a relation names both X and Y, in the sentence or its title
            if not all(any(w in sent_stems or w in title for w in e) for e in ents):
                continue
        elif in_sent < 1 or (in_sent + in_title) < 0.5 * len(q):
            # a long question's other words ("once they've been added") need not appear in the sentence that
            # states the ability it asks about ("Deletion is not supported in FAISS's HNSW")
            states = verb and _same_verb(verb, sent_words) and (_INABILITY.search(sent) or _ABILITY.search(sent))
            if not (states and in_sent >= 2):
                continue
        score = in_sent + TITLE_WEIGHT * in_title - RANK_COST * rank - 0.01 * max(0, len(sent_words) - 30)
        if k == "yes/no":
            if verb and _INABILITY.search(sent):  # "X is not supported", "cannot be ...": the inability stated
                negated = negated or _same_verb(verb, sent_words)
                score += 0.5
            elif verb and _same_verb(verb, sent_words) and _ABILITY.search(sent):
                score += 1.0  # the ability stated for the question's verb ("can be cut to ...")
            score += 1.5 if negated else 0.0
            score += 0.5 if _asserts(sent_words, q_set) else 0.0  # "Search is exact" for "Is search ... exact?"
        elif k == "why":
            score += 1.0 if _CAUSAL.search(sent) else 0.0
        elif k == "relation":
            score += min(3, len(set(m.lower() for m in _RELATIONAL.findall(sent))))
            score -= SET_UP_COST if _SET_UP.match(sent) else 0.0  # "Let E be ...": the set-up, not the relation
            score += 0.5 if _CONCLUDES.search(sent) else 0.0
            score += sum(1 for e in ents if sum(w in sent_stems for w in e) >= 2 / 3 * len(e))  # named in full
        if best is None or score > best[0]:
            best = (score, p, i, sent, negated)
    if best is None:
        return None
    _, p, i, sent, negated = best
    # "No" only where a negation binds the predicate; a sentence that shares every word may still be about
    # something else ("a flat index is exact" for "Is HNSW exact?"), so no "Yes": the sentence speaks for itself
    prefix = "No — " if k == "yes/no" and negated and not _QUESTION_NEGATION.search(question) else ""
    if k == "relation" and not _EQUATION.search(sent):
        before = [s for s in sentences(p["text"])[:i] if _EQUATION.search(s) and len(words(s)) <= 20]
        if before:
            sent = f"{before[-1]} {sent}"
    back = _REFERS_BACK if k == "why" else _POINTS_BACK
    before_it = sentences(p["text"])[i - 1] if i > 0 else ""
    if k in ("why", "relation") and back.search(best[3]) and before_it and before_it not in sent:
        sent = f"{before_it} {sent}"  # "Dense retrieval does the same ...": what it refers to
    return {"kind": k, "sentence": sent, "passage": p, "prefix": prefix}


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
