"""The injection screen in front of the agent: what it calls, backed by stored verdicts.

screen_passages() removes flagged sentences before any backend sees a passage (keeping the facts a flagged sentence
opened with, rag.screen.detector.leading_facts) and names the passage in a warning; scrub_answer() drops any flagged
sentence from a finished answer, whichever backend wrote it; guard_step() withholds flagged search queries,
sub-questions and titles. Each verdict on a passage or a string is stored (rag.screen.verdicts): `rag index build`
judges every passage, a question judges only what was never judged before, and the detector
(rag.screen.detector, with its models and rules) is loaded only then.
"""

from __future__ import annotations

import re
import time

from rag.screen import verdicts


def detector():
    """The process-wide detector (rag.screen.detector), imported and loaded on first need."""
    from rag.screen.detector import detector as loaded

    return loaded()


def screen_passages(passages: list[dict], progress=None) -> tuple[list[dict], list[str], list[str]]:
    """(passages with flagged sentences removed, warnings naming each flagged passage, flagged passage ids). A
    passage's title (its document's title and heading) is screened too, and withheld where flagged. Passages without
    a flagged sentence or title are returned unchanged. Verdicts come from the store (rag.screen.verdicts) where this
    screen has judged the same title and text before; progress(done, total) is told how the others go."""
    out, warnings, flagged = [], [], []
    for p, v in zip(passages, passage_verdicts(passages, progress)):
        if v is None:
            out.append(p)
            continue
        flagged.append(p["id"])
        title = WITHHELD if v["title_flagged"] else p.get("title", "")
        warnings.append(
            f"passage [{p.get('n', '?')}] {p['id']} ('{title}') contains text addressed to the model "
            f"({v['count']} sentence(s), {v['reason']}); those sentences were removed and "
            "not followed (not quoted here, so that the instruction does not travel on in the warning)"
        )
        out.append({**p, "title": title} if v["text"] is None else {**p, "title": title, "text": v["text"]})
    return out, warnings, flagged


SCREEN_CHUNK = 64  # passages whose sentences are scored in one batched pass before each is judged


def passage_verdicts(passages: list[dict], progress=None) -> list[dict | None]:
    """Per passage: None when neither its title nor a sentence is flagged, else {"text": the text without the flagged
    sentences (None when only the title is flagged), "title_flagged", "count": flagged sentences and title, "reason":
    the first flag's}. Stored verdicts are reused; the rest are judged in chunks (the sentences of a chunk scored in
    one batched pass) and stored."""
    keys = [verdicts.text_key(p.get("title", ""), p["text"]) for p in passages]
    known = verdicts.lookup("passage", keys)
    first: dict[str, int] = {}  # each text not judged before, once
    for i, k in enumerate(keys):
        if k not in known:
            first.setdefault(k, i)
    todo = list(first.values())
    for b in range(0, len(todo), SCREEN_CHUNK):
        from rag.screen.detector import pieces  # loaded only for text never judged before

        chunk, det = todo[b : b + SCREEN_CHUNK], detector()
        texts = {i: pieces(passages[i]["text"]) for i in chunk}
        if len(chunk) > 1:
            det.scores([s for i in chunk for s in texts[i]])  # fills the detector's cache in one batched pass
        judged = {keys[i]: judge_passage(texts[i], passages[i].get("title", ""), det) for i in chunk}
        verdicts.store("passage", judged)
        known.update(judged)
        if progress:
            progress(b + len(chunk), len(todo))
    return [known[k] for k in keys]


def judge_passage(sents: list[str], title: str, det) -> dict | None:
    """The verdict on one passage (passage_verdicts) from its pieces and title."""
    from rag.screen.detector import leading_facts, pieces

    flags = det.passage_flags(sents)
    title_flagged = bool(title) and any(det.passage_flags(pieces(title)))
    if not any(flags) and not title_flagged:
        return None
    kept = [s if f is None else leading_facts(s, det) for s, f in zip(sents, flags)]
    text = " ".join(s for s in kept if s) or "[this passage held only instruction-like text]"
    return {
        "text": text if any(flags) else None,
        "title_flagged": title_flagged,
        "count": sum(1 for f in flags if f) + title_flagged,
        "reason": next((f.reason for f in flags if f), "its title"),
    }


def scrub_answer(text: str, screened: list[str] = ()) -> tuple[str, int]:
    """The answer without any flagged sentence (a last check, whichever backend wrote it); (text, removed).

    Only sentences with unquoted words are put to the detector (unquoted): a quote of `screened` (passage texts the
    passage screen, with its second look, has already passed) is kept, since read alone and without the verifier
    the first stage would flag what the passage screen judged to be about a model rather than addressed to one."""
    passed = [" ".join(t.split()) for t in screened]
    raw = text.split("\n")
    split = [[s for s in re.split(r"(?<=[.!?。！？])\s+", line) if s.strip()] for line in raw]
    flat = [s for sents in split for s in sents]  # neighbours across lines too: a code block's lines, a lead-in
    checked = [k for k, s in enumerate(flat) if unquoted(s, passed) and not quoted_with_neighbour(flat, k, passed)]
    flags: list = [None] * len(flat)
    for k, f in zip(checked, detector().flags([flat[k] for k in checked], windows=False) if checked else []):
        flags[k] = f
    lines, start = [], 0
    for line, sents in zip(raw, split):
        mine = flags[start : start + len(sents)]
        start += len(sents)
        lines.append(" ".join(s for s, f in zip(sents, mine) if f is None) if any(mine) else line)
    removed = sum(1 for f in flags if f)
    text = "\n".join(line for line in lines if not ORPHAN_CITATIONS.fullmatch(line)).strip()
    return text, removed


def quoted_with_neighbour(sents: list[str], i: int, texts: list[str]) -> bool:
    """Whether answer sentence i, joined with the sentence before or after it (on its line or the next), is quoted
    word for word from the (whitespace-joined) texts: a short piece the answer's split cut from a quoted sentence
    ("… such as no_proxy, etc." | "and all_proxy.") or a short line of a quoted code block is part of that quote."""
    pairs = [sents[i - 1 : i + 1] if i else [], sents[i : i + 2] if i + 1 < len(sents) else []]
    return any(pair and not unquoted(" ".join(pair), texts) for pair in pairs)


def unquoted(sentence: str, texts: list[str]) -> bool:
    """Whether an answer sentence says something of its own: a part of it between citation marks that is neither
    quoted word for word (20 characters or more) from one of the (whitespace-joined) texts, nor inert (code
    punctuation, a number, one ASCII word: "```", "}", "(timeout=0.001)")."""
    for part in CITATION_MARKS.split(sentence):
        bare = " ".join(part.split())
        words = WORD.findall(bare)
        inert = len(words) < 2 and all(w.isascii() for w in words)
        if not inert and not (len(bare) >= 20 and any(bare in t for t in texts)):
            return True
    return False


WORD = re.compile(r"[^\W\d_]{2,}")  # as rag.screen.detector counts words
CITATION_MARKS = re.compile(r"\[\d+\]")
ORPHAN_CITATIONS = re.compile(r"\s*(?:\[\d+\]\s*)+[.,;]?\s*")  # a line left holding only "[1]" after a removal
WITHHELD = "[withheld: instruction-like text from a passage]"


def guard_strings(values: list[str], question: str = "", passed: str = "") -> tuple[list[str], int]:
    """Each string, or WITHHELD where the detector flags it (queries, titles and other text a step carries). A
    string made only of the question's own words came from the user, not from a passage, and is not checked; nor is
    one made only of those and the words of `passed`, text this screen has already passed (guard_step).
    Verdicts are stored (rag.screen.verdicts), so a title screened once is not screened again."""
    asked = set(re.findall(r"\w+", f"{question} {passed}".casefold()))
    checked = [
        v
        for v in values
        if isinstance(v, str) and (words := set(re.findall(r"\w+", v.casefold()))) and not words <= asked
    ]
    keys = {v: verdicts.text_key(v) for v in checked}
    known = verdicts.lookup("string", list(keys.values()))
    judged = {
        keys[v]: ({"flagged": True} if flagged_string(v) else None)
        for v in dict.fromkeys(checked)
        if keys[v] not in known
    }
    verdicts.store("string", judged)
    known.update(judged)
    withheld = [isinstance(v, str) and v in keys and known[keys[v]] is not None for v in values]
    return [WITHHELD if w else v for v, w in zip(values, withheld)], sum(withheld)


def flagged_string(value: str) -> bool:
    """Whether the detector flags a piece of the string (guard_strings' judgement of a string never judged)."""
    from rag.screen.detector import pieces

    return any(detector().flags(pieces(value)))


def guard_step(step: dict, question: str = "", passed: str = "") -> dict:
    """A streamed or returned agent step with flagged text withheld: the search queries a rewrite or a hop built,
    the titles it came from, the sub-questions, the titles of the passages a search found (`hits`, which the OpenAI
    endpoint streams as reasoning content). Steps carry no passage text of their own. passed: the text a step was
    built from that this screen has already passed (passed_text), whose words need no second look; the ids of the
    step's hits (shown as they are) and their titles, when none is withheld, are added to it."""
    out = dict(step)
    hits = out.get("hits")
    if isinstance(hits, list) and all(isinstance(h, dict) and isinstance(h.get("title"), str) for h in hits):
        titles, withheld = guard_strings([h["title"] for h in hits], question)
        out["hits"] = [{**h, "title": t} for h, t in zip(hits, titles)]
        shown = [str(h.get("id", "")) for h in hits] + ([] if withheld else titles)
        passed = " ".join([passed, *shown])
    for key in ("query", "queries", "sub_questions", "from", "lookups"):
        value = out.get(key)
        if isinstance(value, str):
            out[key] = guard_strings([value], question, passed)[0][0]
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            out[key] = guard_strings(value, question, passed)[0]
    return out


def passed_text(texts: list[str], titles: list[str]) -> str:
    """The screened passage texts and their titles joined, as guard_step's `passed`, when every title is one the
    screen passes; "" when one is withheld (its words might also occur in the texts, and a string carrying it
    must be judged)."""
    if guard_strings(titles)[1]:
        return ""
    return " ".join([*titles, *texts])


def screened_text(text: str, title: str = "") -> str:
    """A passage's text with flagged sentences removed (leading facts kept), for what the agent builds from it."""
    (verdict,) = passage_verdicts([{"title": title, "text": text}])
    return text if verdict is None or verdict["text"] is None else verdict["text"]


def screen_corpus(corpus, progress=None) -> dict:
    """Judge every passage of a corpus (rag.data.corpus.Corpus) and every distinct title (the agent's steps show
    titles), storing each verdict: what `rag index build` does so that questions read verdicts. A verdict stored
    before costs a lookup. progress(stage, done, total) is told how it goes. Returns {"passages", "flagged", "s"}."""
    started, stage = time.perf_counter(), f"screening {corpus.name} for text addressed to a model"
    judged = passage_verdicts(
        [{"title": p.title, "text": p.text} for p in corpus.passages],
        progress=(lambda done, total: progress(stage, done, total)) if progress else None,
    )
    guard_strings(sorted({p.title for p in corpus.passages}))
    flagged = sum(1 for v in judged if v is not None)
    return {"passages": len(judged), "flagged": flagged, "s": round(time.perf_counter() - started, 2)}
