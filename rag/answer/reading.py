"""Answers from the learned reader (rag.answer.reader): the span, in its sentence, with its citation.

- Each target (the question, or each sub-question of a multi-part question) is read over the first READ_PASSAGES
  passages; the span with the best margin over its window's [CLS] score wins. No span above NULL_MARGIN: the
  sentence-ranking answer (the backend's fallback) when a sentence shares the question's words, else the answer
  says "Not found in the passages" and cites the closest passage, never a guessed number.
- A how-to question whose best passage holds a fenced code block answers with that block, whole.
- Empty passages and passages in another language are not read.
- `MemoReader` caches one run's reads by (question, passage text), so grading, the stop decision and the answer
  read each passage once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from rag.answer.code_blocks import FENCE, code_block
from rag.answer.comparison import compare
from rag.answer.links import subject_links
from rag.answer.reader import NULL_MARGIN, Span, sentence_around
from rag.answer.sentence_pick import heading_lead, naming_sentence, pick, with_antecedent
from rag.lexicon import STOPWORDS, sentences, stem

READ_PASSAGES = 5  # passages the reader reads per target (the answer step's best first)
PAIR_FIRST = 3  # after a second hop, each of the first PAIR_FIRST passages is read joined with every other one
PAIR_PASSAGES = 8  # read in pairs, all of them are read: a second hop's passages rank after the first round's
CHAIN_BONUS = 3.0  # read in pairs, added to the margin of a span in a passage of the question's chain
PAIR_JOIN = "\n\n"
NOT_FOUND = "Not found in the passages"
_HOW_TO = re.compile(
    r"^\s*how (?:do|can|should|would|could) (?:i|you|we|one)\b|\bhow to\b|\b(?:what|which) command\b|"
    r"\bcommand (?:to|for|that)\b|\binstall\b|\bcode (?:to|for)\b|\bexample code\b",
    re.IGNORECASE,
)
_LETTER = re.compile(r"[^\W\d_]")


def is_how_to(question: str) -> bool:
    return bool(_HOW_TO.search(question))


def other_language(text: str) -> bool:
    """True for prose that is not English: mostly non-Latin letters, or long Latin-script text with almost no
    English function words."""
    letters = _LETTER.findall(text)
    if not letters:
        return False
    if sum(1 for ch in letters if ch.isascii()) < 0.6 * len(letters):
        return True
    tokens = re.findall(r"[a-zA-Z]+", FENCE.sub(" ", text).lower())
    return len(tokens) >= 20 and sum(1 for t in tokens if t in STOPWORDS) < 0.08 * len(tokens)


_DEFINE = re.compile(
    r"^\s*(?:what(?:\s+is|\s+are|['’]s)\s+(?:meant\s+by\s+|exactly\s+|the\s+(?:basic\s+|main\s+|core\s+|key\s+)?idea\s+"
    r"(?:behind|of)\s+)?(?:an?\s+|the\s+)?(?P<x>[^?]{1,60}?)|what\s+does\s+(?P<y>[^?]{1,60}?)\s+"
    r"(?:mean|stand\s+for)|(?:define|explain)\s+(?:an?\s+|the\s+)?(?P<z>[^?]{1,60}?))\s*[?.]?\s*$",
    re.IGNORECASE,
)


def definition_target(question: str) -> str | None:
    """X for "What is X?", "What's X?", "What is meant by X?", "What's the basic idea behind X?", "What does X mean /
    stand for?", "Define X" (X of at most 4 words), else None."""
    m = _DEFINE.match(question)
    x = (m.group("x") or m.group("y") or m.group("z")).strip() if m else None
    return x if x and len(x.split()) <= 4 else None


def _expands(sentence: str, term: str) -> bool:
    """Whether the sentence spells out the acronym: capitalised words whose initials give its capitals (HNSW:
    Hierarchical Navigable Small World; ALiBi: Attention with Linear Biases)."""
    caps = "".join(ch for ch in term if ch.isupper())
    if " " in term or not 2 <= len(caps) <= 8:
        return False
    initials = "".join(w[0] for w in re.findall(r"\b[A-Z][\w-]*", sentence))
    return caps in initials


def definition_sentence(question: str, passages: list[dict]) -> tuple[str, dict] | None:
    """(sentence, passage) that defines X for a definition question: one that spells out the acronym X, starts
    with X or says "X ... is", or opens a passage whose title names X; None when no sentence does."""
    from rag.lexicon import sentences

    x = definition_target(question)
    if not x:
        return None
    x = re.sub(r"\s+(?:in|of|for|on)\s+.*$", "", x)  # "anisotropy in embeddings" -> "anisotropy"
    low, stems = x.lower(), [stem(w) for w in x.split()]
    best = None
    for rank, p in enumerate(readable(passages)[:READ_PASSAGES]):
        opening_line = re.split(r"(?<=[.!?:])\s+", p["text"].strip().split("\n")[0])[0].rstrip(":")
        for i, sent in enumerate(dict.fromkeys([opening_line] + sentences(p["text"])[:3])):
            words = [stem(w) for w in re.findall(r"[\w-]+", sent)]
            expands = _expands(sent, x)
            names = expands or all(any(w.startswith(st) for w in words) for st in stems)
            opening = re.match(rf"(?:the\s+|an?\s+)?{re.escape(low)}\w*", sent.lower())
            score = 2.0 if expands else 0.0
            if opening:  # X is the subject: "Reciprocal rank fusion (RRF), from ...", "BM25 (Robertson ...) scores"
                score += 1.0 + (0.5 if re.match(r"\s*(?:\(|,|is\b|are\b|means\b)", sent[opening.end() :]) else 0.0)
            title = str(p.get("title", "")).lower()
            if i == 0 and names and all(st in title for st in stems):
                score += 1.0
            heading = title.split(" — ")[-1]
            if i == 0 and " — " in title and stem(heading.strip()) == stem(low):  # a section titled X opens with it
                score += 1.5
            score -= 0.1 * rank
            if score >= 0.8 and (best is None or score > best[0]):
                best = (score, sent, p)
    if best is None:
        return None
    return with_sequel(best[1], best[2]["text"]), best[2]


_SEQUEL = re.compile(r"^(?:instead|rather|it|that is|in other words|put simply)\b", re.IGNORECASE)


def with_sequel(sentence: str, text: str) -> str:
    """The sentence and the one after it when that one carries on its subject ("ALiBi adds no position vectors.
    Instead it adds a penalty ..."): a definition that opens with what X is not, or names X before saying what it
    does, finishes in the next sentence."""
    sents = sentences(text)
    if sentence in sents:
        i = sents.index(sentence)
        if i + 1 < len(sents) and _SEQUEL.match(sents[i + 1]) and len(sents[i + 1].split()) <= 40:
            return f"{sentence} {sents[i + 1]}"
    return sentence


class MemoReader:
    """A reader whose reads are cached by (question, passage text) for one agent run."""

    def __init__(self, reader):
        self.reader = reader
        self.memo: dict[tuple[str, str], Span | None] = {}

    def read(self, question: str, texts: list[str]) -> list[Span]:
        need = list(dict.fromkeys(t for t in texts if (question, t) not in self.memo))
        if need:
            found = {sp.passage: sp for sp in self.reader.read(question, need)}
            for i, t in enumerate(need):
                self.memo[(question, t)] = found.get(i)
        out = []
        for i, t in enumerate(texts):
            sp = self.memo.get((question, t))
            if sp is not None:
                out.append(Span(i, sp.text, sp.start, sp.end, sp.score, sp.null, sp.window))
        return sorted(out, key=lambda sp: -sp.margin)


class PairReader:
    """Reads each of the first PAIR_FIRST passages joined with each other passage, for an answer that needs two:
    after a second hop the question describes its answer through a first-hop passage ("the brother of this draft
    pick") while the answer lies in the second ("... was drafted in 2003"). Read apart, the reader answers from
    the passage that matches the question's words; read joined, it can follow the chain. A span maps back to the
    passage that holds it (one across the join is dropped); each passage keeps its best span.
    Measured on the 100 HotpotQA development questions (single-shot top 5, yes/no questions aside): answer F1 0.250
    read apart, 0.306 read in pairs."""

    def __init__(self, reader):
        self.reader = reader

    def read(self, question: str, texts: list[str]) -> list[Span]:
        pairs = [(i, j) for i in range(min(PAIR_FIRST, len(texts))) for j in range(len(texts)) if i != j]
        if not pairs:
            return self.reader.read(question, texts)
        joined = [texts[i] + PAIR_JOIN + texts[j] for i, j in pairs]
        best: dict[int, Span] = {}
        for sp in self.reader.read(question, joined):
            i, j = pairs[sp.passage]
            cut = len(texts[i]) + len(PAIR_JOIN)
            if sp.end <= len(texts[i]):
                own, start, end = i, sp.start, sp.end
            elif sp.start >= cut:
                own, start, end = j, sp.start - cut, sp.end - cut
            else:
                continue
            if own not in best or sp.margin > best[own].margin:
                best[own] = Span(own, sp.text, start, end, sp.score, sp.null, sp.window)
        return sorted(best.values(), key=lambda sp: -sp.margin)


@dataclass
class ReadAnswer:
    text: str
    spans: list[dict]  # {n, id, text, start, end}: characters in the passage text
    found: bool


def readable(passages: list[dict]) -> list[dict]:
    return [
        p for p in passages if isinstance(p.get("text"), str) and p["text"].strip() and not other_language(p["text"])
    ]


def best_spans(reader, question: str, passages: list[dict]) -> list[tuple[Span, dict]]:
    """[(span, passage)] over the first READ_PASSAGES readable passages, best margin first. Read in pairs (a
    PairReader: after a second hop, or when a passage the subject links to is among them) over the first
    PAIR_PASSAGES: a sure span (margin >= NULL_MARGIN) in a passage that the
    question's subject links to comes first (rag.answer.links: the passage titled by the bridge, where a two-hop
    answer lies), then the others, a span on the question's chain counting CHAIN_BONUS more. Measured on the 100
    HotpotQA development questions: answer F1 0.433 -> 0.451 with the bonus, 0.509 with the links first (of
    their bridge questions' gold answers, 46 lie in a linked passage, 19 in the subject's own)."""
    paired = isinstance(reader, PairReader)
    live = readable(passages)[: PAIR_PASSAGES if paired else READ_PASSAGES]
    spans = reader.read(question, [p["text"] for p in live]) if live else []
    if paired and spans:
        titles = [str(p.get("title") or "") for p in live]
        on_chain, linked = subject_links(question, titles, [p["text"] for p in live])

        def rank(sp: Span) -> tuple:
            return (
                sp.margin < NULL_MARGIN,
                sp.passage not in linked,
                -(sp.margin + CHAIN_BONUS * (sp.passage in on_chain)),
            )

        spans = sorted(spans, key=rank)
    return [(sp, live[sp.passage]) for sp in spans]


@dataclass
class Reading:
    """One question to answer from its passages, with what the answerers share (computed once, when first asked)."""

    reader: object
    question: str
    passages: list[dict]
    sub_questions: list[str] | None
    short: bool
    fallback: object = None
    support: object = None

    @cached_property
    def live(self) -> list[dict]:
        return readable(self.passages)

    @cached_property
    def typed(self) -> dict | None:
        """The typed rules' sentence (why, relation, comparison); a short answer does not use them."""
        if self.short:  # a comparison gives both figures even when it was searched side by side
            return None
        return (None if self.sub_questions else pick(self.question, self.live, READ_PASSAGES)) or compare(
            self.question, self.live, READ_PASSAGES
        )


def code_answer(r: Reading) -> ReadAnswer | None:
    """A how-to question whose best passage holds a fenced code block: that block, whole."""
    block = code_block(r.question, r.live[:READ_PASSAGES]) if is_how_to(r.question) else None
    if not block:
        return None
    p, intro, code = block
    text = code if r.short else (f"{intro}\n\n{code}\n\n[{p['n']}]" if intro else f"{code}\n\n[{p['n']}]")
    start = p["text"].find(code)
    spans = [{"n": p["n"], "id": p["id"], "text": code, "start": start, "end": start + len(code)}]
    return ReadAnswer(text, spans, True)


def span_answer(r: Reading) -> ReadAnswer | None:
    """The reader's span for the question (or each sub-question) in its sentence, above NULL_MARGIN; a long answer
    leads with the sentence that defines what the question names and adds the best-matching support sentence."""
    question, passages, short, typed = r.question, r.passages, r.short, r.typed
    targets = [question] if short or not r.sub_questions else list(r.sub_questions)
    parts, spans = [], []
    for target in targets:
        ranked = best_spans(r.reader, target, passages)
        if not ranked or ranked[0][0].margin < NULL_MARGIN:
            continue
        sp, p = ranked[0]
        spans.append({"n": p["n"], "id": p["id"], "text": sp.text, "start": sp.start, "end": sp.end})
        if short:
            parts.append(f"{sp.text} [{p['n']}]")
        else:
            a, b = with_antecedent(p["text"], *sentence_around(p["text"], sp.start, sp.end))
            sentence = with_sequel(" ".join(p["text"][a:b].split()), p["text"])
            if sentence and all(sentence not in x for x in parts):
                parts.append(f"{sentence} [{p['n']}]")
    if not parts and typed:
        parts.append(f"{typed['sentence']} [{typed['passage']['n']}]")
    if not parts:
        return None
    defined = None if short else naming_sentence(question, r.live, READ_PASSAGES)
    defined = defined or (None if short else definition_sentence(question, passages))
    if not defined and not short and not typed:
        defined = heading_lead(question, r.live, READ_PASSAGES)  # the section the question names
    if typed:  # why / relation / comparison: the sentence that gives the reason, relation or figures comes first
        defined = (typed["sentence"], typed["passage"])
    if defined and all(defined[0] not in x for x in parts):
        parts = [x for x in parts if re.sub(r"\s*\[\d+\]$", "", x) not in defined[0]]
        parts.insert(0, f"{defined[0]} [{defined[1]['n']}]")  # what X is comes first
    if r.support and not short and (not typed or typed["kind"] == "comparison"):  # the figures, then the best match
        extra = r.support(question, r.live)
        if extra and all(re.sub(r"\s*\[\d+\]$", "", extra) not in x for x in parts):
            parts.append(extra)
    return ReadAnswer(" ".join(parts), spans, True)


def ranked_sentence_answer(r: Reading) -> ReadAnswer | None:
    """No span the reader is sure of: the backend's sentence-ranking answer, when a sentence shares the question's
    words."""
    text = r.fallback(r.question, r.live, r.sub_questions, r.short) if r.fallback and r.live else ""
    return ReadAnswer(text, [], True) if text.strip() else None


def not_found(r: Reading) -> ReadAnswer:
    """ "Not found in the passages", citing the closest passage, never a guessed number."""
    closest = r.live[:1] or [p for p in r.passages if str(p.get("text") or "").strip()][:1]
    # one sentence: the planted-instruction screen (rag.screen.detector) reads a bare "Not found ..." as one
    text = NOT_FOUND + (f"; the closest passage is [{closest[0]['n']}]." if closest else ", which are empty.")
    return ReadAnswer(text, [], False)


# The answerers by name, in the order they are asked: the first that answers wins. The only place the order lives;
# `AgentSettings.without` names the ones an ablation turns off (not-found always answers last).
ANSWERERS = {
    "code": code_answer,
    "span": span_answer,
    "ranked-sentence": ranked_sentence_answer,
    "not-found": not_found,
}
SWITCHABLE = tuple(name for name in ANSWERERS if name != "not-found")


def read_answer(
    reader,
    question: str,
    passages: list[dict],
    sub_questions: list[str] | None = None,
    short: bool = False,
    fallback=None,
    support=None,
    without: frozenset[str] | tuple[str, ...] = (),
) -> ReadAnswer:
    """The answer text with [n] markers and the spans it quotes: the first of ANSWERERS that answers.

    fallback(question, passages, sub_questions, short) -> str: the sentence-ranking answer, used when the
    reader is not sure of any span (no margin above NULL_MARGIN) but a passage sentence shares the question's
    words; "not found" only when that finds nothing either.
    support(question, passages) -> str: the best-matching sentence with its [n]; a long answer adds it after the
    span's sentence when it is another sentence (the span's sentence alone often lacks the definition or figure)."""
    r = Reading(reader, question, passages, sub_questions, short, fallback, support)
    asked = [fn for name, fn in ANSWERERS.items() if name == "not-found" or name not in without]
    return next(answer for answerer in asked if (answer := answerer(r)) is not None)
