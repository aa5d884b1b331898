"""Questions that name their answer's options, answered from the passage about each option.

- A choice: "Who was born first, A or B?", "Which band, A or B, had more members?", "Which of A and B ...?",
  "Is A or B written more for ...?". The answer is one of the options, never a span from elsewhere: a span
  reader trained on single passages answers these with whatever its best passage says (a date, a place).
  A time comparison (born first, died earlier, founded later, more recent) compares the year each option's
  passage gives for the question's verb; any other question picks the option whose passage holds more of the
  question's remaining words ("Which writer was from England, A or B?").
- Both / same: "Are A and B both American?", "Were A and B of the same nationality?". Yes when each option's
  passage holds the property (a country and its demonym count as one word); for "same", when both passages name
  the same nationality or country first.

Each option's passage is the one whose title names it (entity lookups put these among the passages), else the
first that mentions it. When the words tie, the reader (when given) decides: the option whose passage it answers
the question from more surely, and "the same P" beyond nationality by reading P for each option. When an option
has no passage, or nothing decides, None: the reader's answer stands.
"""

from __future__ import annotations

import re

from rag.lexicon import STOPWORDS, stem, words

MAX_CHARS = 300  # a longer question is not read for options (the patterns and the title search grow with length)
_OPTION = r"[^,?:]+?"
_CHOICE = [
    # "Who was born first, A or B?" / "...: A or B?"
    re.compile(rf"^(?P<pre>[^?]*?)\s*[,:]\s*(?P<a>{_OPTION})\s+or\s+(?P<b>{_OPTION})\s*\??$", re.I),
    # "Which band, A or B, had more members?"
    re.compile(rf"^(?P<pre>[^,?]*?)\s*,\s*(?P<a>{_OPTION})\s+or\s+(?P<b>{_OPTION})\s*,\s*(?P<post>[^?]+)\??$", re.I),
    # "Which of A and B has ...?"
    re.compile(
        rf"^(?P<pre>which|who)\s+of\s+(?:the\s+)?(?P<a>{_OPTION})\s+(?:and|or)\s+(?P<b>[^,?]+?)\s+"
        r"(?P<post>(?:has|have|had|is|was|were|are|did|does|do|can|could|will|would)\b[^?]*)\??$",
        re.I,
    ),
    # "Who is younger A or B?": no comma, a comparative just before the options
    re.compile(
        r"^(?P<pre>(?:who|which|what)\b[^,?:]{0,60}?\b(?:\w+er|more\s+\w+|less\s+\w+|first|earlier|later))\s+"
        rf"(?P<a>{_OPTION})\s+or\s+(?P<b>{_OPTION})\s*\??$",
        re.I,
    ),
    # "Is A or B written more for ...?"
    re.compile(
        rf"^(?P<pre>is|are|was|were|did|does|do)\s+(?P<a>{_OPTION})\s+or\s+(?P<b>{_OPTION})\s+"
        r"(?P<post>(?:\w+ed|\w+en|more|less|a|an|the|located|based|from|in)\b[^?]*)\??$",
        re.I,
    ),
]
_BOTH = re.compile(
    r"^(?:are|were|is|was|do|does|did)\s+(?:both\s+)?(?:the\s+\w+\s+)?(?P<a>[^?]+?)\s*,?\s+and\s+(?P<b>[^?]+?)\s+"
    r"(?P<rest>(?:both|all|the\s+same|of\s+the\s+same|from\s+the\s+same|in\s+the\s+same|located|each)\b[^?]*)\??$",
    re.I,
)
# "Are both A and B genera?": where B ends is found from the passages' titles (_split_tail)
_BOTH_FIRST = re.compile(
    r"^(?:are|were|is|was|do|does|did)\s+both\s+(?:the\s+)?(?P<a>[^?]+?)\s*,?\s+(?:and|or)\s+(?P<tail>[^?]+?)\s*\??$",
    re.I,
)
_EARLY = re.compile(r"\b(first|earlier|earliest|older|oldest|before|sooner)\b", re.I)
_LATE = re.compile(r"\b(later|latest|last|younger|youngest|newer|newest|recent|recently|after)\b", re.I)
_EVENT = {  # the question's verb -> the words that state its year in a passage
    "born": ("born", "birth"),
    "die": ("died", "death", "killed"),
    "found": ("founded", "established", "formed", "created", "incorporated", "started"),
    "publish": ("published", "released", "premiered", "launched", "debuted", "first"),
    "release": ("released", "published", "premiered", "launched", "debuted"),
}
_YEAR = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d)")
_DEMONYMS = {
    "american": "united states",
    "u.s.": "united states",
    "america": "united states",
    "british": "united kingdom",
    "uk": "united kingdom",
    "english": "england",
    "scottish": "scotland",
    "welsh": "wales",
    "irish": "ireland",
    "canadian": "canada",
    "australian": "australia",
    "french": "france",
    "german": "germany",
    "italian": "italy",
    "spanish": "spain",
    "mexican": "mexico",
    "japanese": "japan",
    "chinese": "china",
    "indian": "india",
    "russian": "russia",
    "swedish": "sweden",
    "norwegian": "norway",
    "danish": "denmark",
    "dutch": "netherlands",
    "belgian": "belgium",
    "swiss": "switzerland",
    "austrian": "austria",
    "polish": "poland",
    "brazilian": "brazil",
    "argentine": "argentina",
    "turkish": "turkey",
    "greek": "greece",
    "korean": "korea",
    "filipino": "philippines",
    "czech": "czech",
    "new zealand": "new zealand",
    "south african": "south africa",
    "finnish": "finland",
    "portuguese": "portugal",
}
_GENERIC = {
    stem(w) for w in "both all each type types kind kinds located based used described considered known".split()
}
_PLACES = sorted(set(_DEMONYMS) | set(_DEMONYMS.values()), key=len, reverse=True)


_LEMMAS = {"genera": "genus", "people": "person", "women": "woman", "men": "man"}


def _stems(text: str) -> set[str]:
    return {stem(_LEMMAS.get(w, w)) for w in words(text) if w not in STOPWORDS and len(w) > 1}


def _country(text: str) -> str | None:
    """The first nationality or country a text names, as its country ("American" -> "united states")."""
    low = text.lower()
    best = None
    for place in _PLACES:
        m = re.search(rf"(?<![\w.]){re.escape(place)}(?![\w])", low)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), _DEMONYMS.get(place, place))
    return best[1] if best else None


def _passage_for(option: str, passages: list[dict]) -> dict | None:
    """The passage titled by the option (the same words, else most of the title's words in the option or the
    reverse), else the first passage whose text names the option."""
    opt = _stems(option)
    if not opt:
        return None
    titles = [(p, _stems(re.sub(r"\s*\([^)]*\)\s*$", "", p.get("title") or ""))) for p in passages]
    for p, title in titles:
        if title == opt:
            return p
    for p, title in titles:
        if title and (len(opt & title) >= 0.5 * len(title) or len(opt & title) >= 0.6 * len(opt)):
            return p
    for p in passages:
        if option.lower() in p["text"].lower():
            return p
    return None


def _year(text: str, event: str | None) -> int | None:
    """The year a passage gives for the event: in the sentence naming the event's words, else the first year."""
    if event == "born" or event is None:
        m = _YEAR.search(text)
        return int(m.group(1)) if m else None
    if event == "die":
        m = re.search(r"\(([^)]*)\)", text[:300])  # "(4 May 1887 – 13 May 1961)": the second year
        years = _YEAR.findall(m.group(1)) if m else []
        if len(years) >= 2:
            return int(years[1])
    for cue in _EVENT[event]:
        m = re.search(rf"\b{cue}\b[^.]{{0,80}}?{_YEAR.pattern}", text, re.I)
        if m:
            return int(m.group(1))
    m = _YEAR.search(text)
    return int(m.group(1)) if m else None


def _event(question: str) -> str | None:
    q = question.lower()
    for key in _EVENT:
        if re.search(rf"\b{key}", q):
            return key
    return None


def _weighted(wanted: set[str], names: set[str], text: str) -> int:
    """How many of the wanted stems a text holds, names (capitalised in the question) counting twice."""
    have = _stems(text)
    return sum(2 if w in names else 1 for w in wanted & have)


def _choose(
    a: str, b: str, predicate: str, passages: list[dict], question: str = "", reader=None
) -> tuple[str, dict] | None:
    pa, pb = _passage_for(a, passages), _passage_for(b, passages)
    if pa is None or pb is None or pa is pb:
        return None
    early, late = _EARLY.search(predicate), _LATE.search(predicate)
    if early or late:
        event = _event(predicate)
        ya, yb = _year(pa["text"], event), _year(pb["text"], event)
        if ya is not None and yb is not None and ya != yb:
            first = (a, pa) if ya < yb else (b, pb)
            second = (b, pb) if ya < yb else (a, pa)
            return first if early and not late else second
    wanted = _stems(predicate) - _stems(a) - _stems(b) - {"which", "who", "whose"}
    country = _country(predicate)
    names = _stems(" ".join(re.findall(r"(?<=\s)[A-Z][\w'-]+", predicate)))
    sa = _weighted(wanted, names, pa["text"]) + 2 * (country is not None and _country(pa["text"]) == country)
    sb = _weighted(wanted, names, pb["text"]) + 2 * (country is not None and _country(pb["text"]) == country)
    if sa == sb:
        return _reader_choice(question, (a, pa), (b, pb), reader)
    return (a, pa) if sa > sb else (b, pb)


def _reader_choice(question: str, first: tuple[str, dict], second: tuple[str, dict], reader) -> tuple[str, dict] | None:
    """The option whose passage the reader answers the question from more surely (the larger margin of its best
    span over its window's no-answer score), when the words and years tie; None without a reader or a span.
    The question comes without its options ("Which filmmaker was known for animation?"): with "A or B" in it, a
    reader trained on HotpotQA comparisons answers with whichever name it sees, and its margins stop telling the
    passages apart."""
    if reader is None or not question:
        return None
    spans = [sp for sp in reader.read(question, [first[1]["text"], second[1]["text"]]) if sp.passage in (0, 1)]
    if not spans:
        return None
    best = max(spans, key=lambda sp: sp.margin)
    return first if best.passage == 0 else second


def _names_country(text: str, country: str) -> bool:
    low = text.lower()
    names = [country] + [w for w, c in _DEMONYMS.items() if c == country]
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", low) for n in names)


def _both(a: str, b: str, rest: str, passages: list[dict], reader=None) -> tuple[str, list[dict]] | None:
    """ "yes"/"no" for "Are A and B both P?" (each passage holds P) or "... of the same nationality?"."""
    pa, pb = _passage_for(a, passages), _passage_for(b, passages)
    if pa is None or pb is None or pa is pb:
        return None
    if re.search(r"\bsame\b", rest, re.I):
        ca, cb = _country(pa["text"]), _country(pb["text"])
        if re.search(r"nationality|country|citizens?", rest, re.I) and ca and cb:
            return ("yes" if ca == cb else "no"), [pa, pb]
        return _same_by_reader(a, b, rest, pa, pb, reader)
    country = _country(rest)
    named = {stem(w) for w, c in _DEMONYMS.items() if c == country} | _stems(country or "")
    prop = _stems(rest) - _GENERIC - named

    def holds(text: str) -> bool:
        have = _stems(text)
        return (country is None or _names_country(text, country)) and len(prop & have) >= round(0.6 * len(prop))

    if country is None and not prop:
        return None
    return ("yes" if holds(pa["text"]) and holds(pb["text"]) else "no"), [pa, pb]


def _same_by_reader(a: str, b: str, rest: str, pa: dict, pb: dict, reader) -> tuple[str, list[dict]] | None:
    """ "yes"/"no" for "Are A and B located in the same P?" beyond nationality. The reader answers "A is located in
    what P?" from A's passage and the same for B; yes when each answer is (mostly) in the other option's passage
    too. A cross-check rather than a comparison of the two spans, since the reader may take a wider or narrower
    span in each ("Stockholm, Sweden" from one, "Norrmalm" from the other)."""
    m = re.search(r"\bthe\s+same\s+(?P<p>[^?]{1,60}?)\s*$", rest, re.I)
    if reader is None or not m:
        return None
    prop = m.group("p")
    asked = re.sub(r"\b(?:of\s+|from\s+|in\s+)?the\s+same\b", lambda x: x.group(0)[: -len("the same")] + "what", rest)
    answers = []
    for option, passage in ((a, pa), (b, pb)):
        spans = reader.read(f"{option} is {asked}?", [passage["text"]])
        value = _stems(_nearest_to(prop, spans[0].text)) - _stems(option) - _stems(prop) if spans else set()
        if not value:
            return None
        answers.append(value)
    shared = [
        len(answers[0] & _stems(pb["text"])) / len(answers[0]),
        len(answers[1] & _stems(pa["text"])) / len(answers[1]),
    ]
    return ("yes" if min(shared) >= 0.5 else "no"), [pa, pb]


def _nearest_to(prop: str, span: str) -> str:
    """The words of a span that name the property itself: "Norrmalm" from "Norrmalm district of Stockholm, Sweden"
    (what comes before the property's noun), "Norrmalm" from "the district of Norrmalm" (what follows it when
    nothing comes before). A wide span names the places that hold the property's value too, and two different
    districts of one city share those."""
    noun = prop.split()[-1] if prop.split() else ""
    m = re.search(rf"\b{re.escape(noun)}\w*\b", span, re.I) if noun else None
    if m is None:
        return span
    before = re.sub(r"^(?:the|a|an)\s+", "", span[: m.start()].strip(" ,"), flags=re.I)
    after = re.sub(r"^(?:of|in|at)\s+", "", span[m.end() :].strip(" ,"), flags=re.I)
    return before or after or span


def _split_tail(tail: str, passages: list[dict]) -> tuple[str, str] | None:
    """("B", "the property") for the words after "and" in "Are both A and B P?": the longest start of them that
    names a passage's title."""
    tokens = tail.split()
    for k in range(len(tokens) - 1, 0, -1):
        b = " ".join(tokens[:k])
        p = _passage_for(b, passages)
        if p is not None and _stems(b) & _stems(p.get("title") or ""):
            return b, " ".join(tokens[k:])
    return None


def options_answer(question: str, passages: list[dict], reader=None) -> dict | None:
    """{"kind": "choice" | "yes/no", "answer": the option or yes/no, "passages": the evidence} or None.
    reader (rag.answer.reader.Reader or a wrapper): breaks a tie between two options, and answers "the same P"."""
    q = " ".join(question.split())
    if len(q) > MAX_CHARS:
        return None
    m = _BOTH.match(q)
    if m:
        found = _both(m.group("a"), m.group("b"), m.group("rest"), passages, reader)
        return {"kind": "yes/no", "answer": found[0], "passages": found[1]} if found else None
    m = _BOTH_FIRST.match(q)
    if m:
        split = _split_tail(m.group("tail"), passages)
        found = _both(m.group("a"), split[0], split[1], passages, reader) if split else None
        return {"kind": "yes/no", "answer": found[0], "passages": found[1]} if found else None
    for pattern in _CHOICE:
        m = pattern.match(q)
        if not m:
            continue
        parts = m.groupdict()
        predicate = f"{parts.get('pre') or ''} {parts.get('post') or ''}"
        asked = " ".join(predicate.split()) + "?"  # the question without its options, for the reader
        found = _choose(m.group("a").strip(), m.group("b").strip(), predicate, passages, asked, reader)
        return {"kind": "choice", "answer": found[0], "passages": [found[1]]} if found else None
    return None
