"""Small text helpers shared by the agent, the answerers and the screen: words, content words, sentences, entity spans."""

from __future__ import annotations

import re
import unicodedata

STOPWORDS = frozenset(
    """
a an the and or but if then than so of in on at to for from by with about into over under between through
is are was were be been being am do does did doing have has had having can could will would shall should may
might must what which who whom whose when where why how that this these those there here it its it's they them
their he him his she her we us our you your i me my as not no nor only also just very too more most much many
some any each all both either neither other such same own one ones per via vs same also does did whether
""".split()
)

_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
# A sentence ends at . ! ? before a space and a capital, a digit, a quote or a bracket, in any script: a letter
# that is not lower-case (Cyrillic capitals, and the caseless Hebrew, Arabic, Devanagari or Tamil letters); and
# at the full stops of other scripts (the Devanagari danda, Armenian, Urdu, Ethiopic, Burmese) and at the CJK full
# stops, with or without a space, but not inside a quotation (after the closing mark instead).
# "e.g. the" and "approx. two" are not ends.
_SENT_SPLIT = re.compile(
    r"(?<=[.!?])\s+(?=[0-9\"'(\[]|[^\W\d_](?<![a-zß-ÿ]))|(?<=[।॥։۔።။])\s*(?=\S)|(?<=[。！？])(?![”」』\"'’])\s*(?=\S)|(?<=[。！？][”」』])\s*(?=\S)"
)
# Runs of capitalised words (allowing short joiners): "Kiss and Tell", "Scott Derrickson", "Ed Wood".
_ENTITY = re.compile(r"\b([A-Z][\w'’.-]*(?:\s+(?:(?:of|the|and|de|la|von|van|in|for|&)\s+)?[A-Z0-9][\w'’.-]*)*)")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# a one-letter symbol named as one: "the b parameter", "parameter b", "what does d control"
_SYMBOL = re.compile(
    r"\b(?:the\s+)?([b-hj-zB-HJ-Z])\s+(?:parameters?|values?|terms?|coefficients?|constants?|settings?|"
    r"hyperparameters?|controls?|stands?\s+for|means?|do(?:es)?)\b"
    r"|\b(?:parameters?|variables?|constants?|coefficients?|symbols?|does|do)\s+([b-hj-zB-HJ-Z])\b(?!['’])"
)


def symbols(text: str) -> set[str]:
    """The one-letter symbols a text names as such ("the b parameter" -> {"b"}): content words although one letter."""
    return {(m.group(1) or m.group(2)).lower() for m in _SYMBOL.finditer(text)}


def stem(word: str) -> str:
    """The one stem every answerer matches words by: 'choosing'/'choose' -> 'choos', 'parameters' -> 'parameter', "FAISS's" -> 'faiss',
    'embeddings'/'embedding' -> 'embedd'."""
    w = re.sub(r"['’]s$", "", word.lower())
    if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):  # the plural first: "embeddings" as "embedding"
        w = w[:-1]
    for suffix in ("ing", "ed", "e"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def content_words(text: str) -> list[str]:
    """Lower-cased words without stopwords and one-letter tokens (but for the symbols the text names: "the b
    parameter"), in order, without repeats."""
    keep = symbols(text)
    seen: dict[str, None] = {}
    for w in words(text):
        if w not in STOPWORDS and (len(w) > 1 or w in keep):
            seen.setdefault(w, None)
    return list(seen)


def overlap(query: str, text: str) -> float:
    """Share of the query's content words that occur in text (0..1)."""
    q = content_words(query)
    if not q:
        return 0.0
    t = set(words(text))
    return sum(1 for w in q if w in t) / len(q)


_FENCED = re.compile(r"^(```|~~~)[^\n]*\n.*?(?:^\1[^\n]*$|\Z)", re.S | re.M)  # a fenced code block, whole
_MARKUP = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")  # an HTML tag
_LOG_LINE = re.compile(r"^\s*(?:INFO|DEBUG|WARNING|WARN|ERROR|TRACE)\b:?|^\s*(?:\$|>>>|#!)\s")


def debris(sentence: str) -> bool:
    """Code, log lines and symbol soup: not something to quote as an answer. The vowel signs of Indic scripts are
    marks, not symbols ("உதவியாளருக்கு" is a word)."""
    symbols = sum(
        1
        for ch in sentence
        if not (ch.isalnum() or ch.isspace() or unicodedata.category(ch).startswith("M"))
        and ch not in ".,;:'’\"()-–—%·"
    )
    return bool(_LOG_LINE.search(sentence)) or "`" * 3 in sentence or symbols > 0.25 * max(len(sentence), 1)


def split_sentences(block: str) -> list[str]:
    """A block of text cut at sentence ends, as sentences() cuts it, with nothing left out."""
    return [s.strip() for s in _SENT_SPLIT.split(block) if s.strip()]


LEAD_IN_WORDS = 10  # a sentence ending in ":" shorter than this is a lead-in ("Gains and discounts:"), left out


def sentences(text: str) -> list[str]:
    """The readable sentences of a passage: code blocks, HTML tags, table rows, log lines, symbol soup and short
    lead-ins to a list or formula left out ("Instead it adds a penalty that grows linearly with the distance:" is
    kept: it says what the formula means)."""
    out = []
    text = _MARKUP.sub(" ", _FENCED.sub("\n\n", text))
    text = "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("|") and not _LOG_LINE.search(line)
    )  # no table rows, no log lines
    text = re.sub(r"(?:\|[^|\n]*){3,}\|", "\n\n", text)  # nor tables flattened onto one line
    for block in re.split(r"\n\s*\n|\n(?=#)|\n[-*] ", text):
        block = re.sub(r"^(?:#+|[-*+]|\d+\.)\s+", "", block.strip())  # no heading marks, no list bullets (a
        # bullet is followed by a space: "**RoPE** rotates" keeps its bold marks, "2.5 nats" its figure)
        block = re.sub(r"\s+", " ", block)
        out.extend(
            s.strip()
            for s in _SENT_SPLIT.split(block)
            if len(s.strip()) > 2 and not (s.strip().endswith(":") and len(s.split()) < LEAD_IN_WORDS) and not debris(s)
        )
    return out


def entities(text: str) -> list[str]:
    """Capitalised spans, longest first within each match, without sentence-initial stopwords."""
    found: dict[str, None] = {}
    for match in _ENTITY.finditer(text):
        span = match.group(1).strip(" .'’-")
        parts = span.split()
        while parts and parts[0].lower() in STOPWORDS:
            parts = parts[1:]
        if parts and not (len(parts) == 1 and len(parts[0]) < 3):
            found.setdefault(" ".join(parts), None)
    return list(found)


def normalize_answer(s: str) -> str:
    """SQuAD normalisation: lower case, no punctuation, no articles, single spaces."""
    s = s.lower()
    s = re.sub(r"[^\w\s]", " ", s)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def strip_citations(text: str) -> str:
    return re.sub(r"\s*\[\d+(?:,\s*\d+)*\]", "", text).strip()
