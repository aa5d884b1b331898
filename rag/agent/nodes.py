"""The agent's graph nodes: plain functions of (state, context) that return a state update.

Each node reads the run's state (a plain dict, see AgentState) and an AgentContext (the retriever, the LLM
backend and the run's bounds), and returns only the keys it changes; LangGraph merges them (rag.agent.graph
wires the nodes). A test can call any node on its own with a hand-made state.

A "step" is one retrieval round (one or more queries searched together); max_steps bounds them.
Each round also runs the entity lookup (rag.agent.tools.TitleLinker): passages whose titles are named in the
question (first round) or in the best first-hop passages (the first round too when the planner proposed a hop,
and the second hop). Whether a proposed hop runs is the learned multi-hop decision (rag.agent.multihop). Bridge
questions get their second hop from what the first hop found: the question plus each first-hop passage's title and
new entities; their answer reads the passages in pairs (rag.answer.reading.PairReader), as does an answer whose
passages include one that a passage about the question's subject links to (rag.answer.links), which the grader
keeps.
All retrieved passages are ranked by tier (see ranked_ids); all_gold@10 in rag.studies.agent_eval scores that list.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, replace
from typing import Annotated, Any, TypedDict

from rag.agent.multihop import default_model as multihop_model
from rag.agent.multihop import effective_threshold
from rag.agent.planner import (
    HOP_FROM,
    bridge_queries,
    nothing_found_answer,
    plan_question,
    rewrite_query,
)
from rag.answer.abstain import abstention_answer
from rag.answer.links import anchors, names, subject_links, title_name
from rag.answer.llm import ExtractiveBackend
from rag.answer.reading import NOT_FOUND
from rag.lexicon import overlap
from rag.retrieve import Hit, Retriever
from rag.screen.guard import screen_passages, scrub_answer

LOOKUP_SOURCE = "titles named in {}"  # how a step names what an entity lookup read: the question or a passage's title
OPENING_SOURCE = "opening of {}"  # how a step names a document whose opening passage it looked up
FIRST_TIER = 7  # how many of the first search's hits rank ahead of lookups and second-hop hits
KEEP_OVERLAP = 0.34  # share of the query's content words a passage must contain to count as relevant
KEEP_OVERLAP_TOP = 0.2  # a lower bar for the first TOP_HITS hits of a query
TOP_HITS = 2  # the retriever's rank is evidence too: a paraphrase shares few exact words with its answer
JUDGE_KEEPS = 0.6  # overlap at which a passage stays kept even when the LLM judge rejects it
MAX_CONTEXT = 8  # passages handed to the answer step
RESERVE_FROM = 10  # a long answer's sentence ranker also reads the passages among this many best that were dropped
LINK_FROM = 3  # first-round passages whose named titles are looked up in the same round (planned hops only)
LINK_EACH = 3  # the most titles looked up per passage


class AgentState(TypedDict, total=False):
    question: str
    mode: str
    plan_hop: bool
    sub_questions: list[str]
    bridge_template: str | None
    hop_reason: str | None
    hop_probability: float | None  # rag.agent.multihop's probability that the question is multi-hop (planned hops)
    pending: list[dict]  # searches for the next round: {"query", "tier"}
    lookups: list[dict]  # entity lookups for the next round: {"source", "ids", "tier"}
    round: int
    hop: int
    found: dict  # passage id -> {"hit", "round", "rank", "query", "via", "kept", "overlap"}
    lists: list  # every ranked list of the run: {"tier", "source", "ids"}; ranked_ids merges them
    last_round: list
    rewrites: int
    answer: str
    citations: list
    spans: list  # the reader's spans the answer quotes: {n, id, text, start, end}
    abstained: bool  # the answer says the passages do not answer the question
    steps: Annotated[list, operator.add]
    warnings: Annotated[list, operator.add]


@dataclass(frozen=True)
class AgentContext:
    """What the nodes need besides the state: a rag.retrieve.Retriever, an LLM backend (rag.answer.llm), the
    hits per search (k), the bound on retrieval rounds, the entity linker (None: no lookups) and the answer length."""

    retriever: Retriever
    backend: Any
    k: int = 5
    max_steps: int = 4
    linker: Any = None
    short_answer: bool = False
    reader: Any = None  # rag.answer.reading.MemoReader over the learned reader; None: no reader
    hop_threshold: float | None = None  # multi-hop probability for a planned hop to run (None: the trained model's)
    abstainer: Any = None  # rag.answer.abstain.Abstainer: the answer abstains below its threshold; None: never
    without: tuple[str, ...] = ()  # answer components turned off (AgentSettings.without)


def analyze(state: AgentState, ctx: AgentContext) -> dict:
    """Plan the question: its mode, sub-questions, the first searches and entity lookups."""
    plan = plan_question(state["question"])
    pending = [{"query": q, "tier": 0} for q in plan["queries"]]
    pending += [{"query": q, "tier": 2} for q in plan["extra_queries"]]
    mentioned = ctx.linker.mentions(state["question"]) if ctx.linker else []
    model = multihop_model() if plan["hop"] else None
    probability = round(model.probability(state["question"]), 3) if model else None
    lookups = [{"source": LOOKUP_SOURCE.format("the question"), "ids": mentioned, "tier": 1}] if mentioned else []
    step = {
        "node": "analyze",
        "mode": plan["mode"],
        "sub_questions": plan["sub_questions"],
        "hop": plan["hop_reason"],
        "hop_probability": probability,
        "queries": [p["query"] for p in pending],
        "lookups": mentioned,
    }
    return {
        "mode": plan["mode"],
        "plan_hop": plan["hop"],
        "sub_questions": plan["sub_questions"],
        "bridge_template": plan["bridge_template"],
        "hop_reason": plan["hop_reason"],
        "hop_probability": probability,
        "pending": pending,
        "lookups": lookups,
        "round": 0,
        "hop": 1,
        "found": {},
        "lists": [],
        "rewrites": 0,
        "steps": [step],
    }


def retrieve(state: AgentState, ctx: AgentContext) -> dict:
    """One round: search the pending queries together, resolve the pending lookups, record every ranked list."""
    pending, lookups = state["pending"], state.get("lookups") or []
    rnd = state["round"] + 1
    results = ctx.retriever.search_many([p["query"] for p in pending], ctx.k) if pending else []
    found, lists, new_ids = dict(state["found"]), list(state["lists"]), []
    by_id = ctx.retriever.corpus.passage_by_id

    def add(pid: str, hit, rank: int, query: str, via: str) -> None:
        if pid not in found:
            found[pid] = {"hit": hit, "round": rnd, "rank": rank, "query": query, "via": via, "kept": None}
            new_ids.append(pid)

    for p, hits in zip(pending, results):
        ids = [h.passage.id for h in hits]
        lists.append({"tier": p["tier"], "source": p["query"], "ids": ids})
        if p["tier"] == 0:  # the rest of a first search ranks after the lookups and the second hop
            lists[-1]["ids"] = ids[:FIRST_TIER]
            lists.append({"tier": 3, "source": p["query"], "ids": ids[FIRST_TIER:]})
        for rank, h in enumerate(hits):
            add(h.passage.id, h, rank, p["query"], "search")
    if rnd == 1 and pending and results and not ctx.short_answer:
        lookups = lookups + opening_lookups(state["question"], [h.passage.id for h in results[0]], found, by_id)
    if rnd == 1 and state.get("plan_hop") and results and ctx.linker:
        lookups = lookups + linked_lookups(ctx, [h.passage for h in results[0][:LINK_FROM]], found)
    for lk in lookups:
        lists.append({"tier": lk["tier"], "source": lk["source"], "ids": lk["ids"]})
        via = lk.get("via", "lookup")
        for rank, pid in enumerate(lk["ids"]):
            if pid in found and found[pid]["round"] == rnd and via == "lookup":
                found[pid] = {**found[pid], "via": "lookup"}  # searched and named: the grader keeps it as named
            add(pid, Hit(by_id[pid], 0.0), rank, state["question"], via)
    step = {
        "node": "retrieve",
        "round": rnd,
        "queries": [p["query"] for p in pending],
        "lookups": [lk["source"] for lk in lookups],
        "hits": [_hit_brief(found[i]["hit"]) for i in new_ids[: 2 * ctx.k]],
        "new": len(new_ids),
    }
    return {
        "found": found,
        "lists": lists,
        "last_round": new_ids,
        "round": rnd,
        "pending": [],
        "lookups": [],
        "steps": [step],
    }


def linked_lookups(ctx: AgentContext, passages: list, found: dict) -> list[dict]:
    """For a question the planner would hop on: the passages titled by what the first search's best passages name
    (the links a second hop would follow), looked up in the same round, so a question that does not hop still
    has its bridge passage. Ranked with the second hop (tier 2) and graded by overlap like a search ("linked")."""
    out = []
    for p in passages:
        ids = [pid for pid in ctx.linker.mentions(p.text, exclude={p.id}) if pid not in found][:LINK_EACH]
        if ids:
            out.append({"source": LOOKUP_SOURCE.format(p.title), "ids": ids, "tier": 2, "via": "linked"})
    return out


_HOW_DOES = re.compile(r"^\s*how\s+(?:does|do|is|are)\s+(?!.*\b(?:related|relate|compare)\b)", re.IGNORECASE)


def opening_lookups(question: str, ids: list[str], found: dict, by_id: dict) -> list[dict]:
    """For "What is X?" / "How does X work?": the opening passage (<file>#0) of the document that holds most of the
    first search's hits, when the search missed it. Documents define their subject first, and a search for X often
    ranks the later sections that use X above the one that says what X is. A long answer only (a short answer is
    a factoid span, and the first search's own hits serve it better)."""
    from rag.answer.reading import definition_target

    if not ids or not (definition_target(question) or _HOW_DOES.match(question)):
        return []
    docs = [pid.rsplit("#", 1)[0] for pid in ids if "#" in pid]
    if not docs:
        return []
    doc = max(dict.fromkeys(docs), key=docs.count)
    opening = f"{doc}#0"
    if docs.count(doc) < 2 or opening not in by_id or opening in found:
        return []
    return [{"source": OPENING_SOURCE.format(doc), "ids": [opening], "tier": 0}]


def grade(state: AgentState, ctx: AgentContext) -> dict:
    """Keep the last round's passages that share enough content words with their query (lookups are kept);
    a backend that can judge may then rescue or reject them. Planted instructions are flagged, never obeyed."""
    found = {i: dict(v) for i, v in state["found"].items()}
    ids = state["last_round"]
    warnings, judged_by = [], "overlap"
    for pid in ids:
        f = found[pid]
        p = f["hit"].passage
        ov = overlap(f["query"], f"{p.title} {p.text}")
        f["overlap"] = round(ov, 3)
        f["kept"] = ov >= KEEP_OVERLAP or (f["rank"] < TOP_HITS and ov >= KEEP_OVERLAP_TOP) or f["via"] == "lookup"
    if getattr(ctx.backend, "can_judge", False) and ids:
        passages = [
            {"n": j + 1, "id": pid, "title": found[pid]["hit"].passage.title, "text": found[pid]["hit"].passage.text}
            for j, pid in enumerate(ids)
        ]
        passages, screen_warnings, _ = screen_passages(passages)  # the judge reads screened text, as the answer does
        warnings += screen_warnings
        try:
            verdict = ctx.backend.judge(state["question"], passages)
            if verdict is not None:
                judged_by = f"overlap+{ctx.backend.name}"
                for pid, ok in zip(ids, verdict):  # the LLM may rescue or reject what overlap decided
                    found[pid]["kept"] = bool(ok) or (found[pid]["kept"] and found[pid]["overlap"] >= JUDGE_KEEPS)
        except Exception as exc:  # a failing judge is no judge
            warnings.append(f"{ctx.backend.name} could not grade passages ({type(exc).__name__}); used overlap only")
    rescued = reader_keeps(state, ctx, found, ids)
    linked = link_keeps(state["question"], found, ids)
    kept = [pid for pid in ids if found[pid]["kept"]]
    step = {
        "node": "grade",
        "round": state["round"],
        "judged_by": judged_by + ("+reader" if ctx.reader is not None else ""),
        "kept": [{"id": pid, "overlap": found[pid]["overlap"]} for pid in kept],
        "dropped": len(ids) - len(kept),
    }
    if rescued:
        step["kept_by_reader"] = rescued
    if linked:
        step["kept_by_link"] = linked
    margins = [(found[pid]["reader"], pid) for pid in kept if "reader" in found[pid]]
    if margins:
        best = max(margins)
        step["reader_margin"] = best[0]  # the reader's best answer among the kept passages (route reads it)
        step["reader_passage"] = {"id": best[1], "overlap": found[best[1]]["overlap"]}
    if warnings:
        step["warnings"] = warnings
    return {"found": found, "steps": [step], "warnings": warnings}


def link_keeps(question: str, found: dict, ids: list[str]) -> list[str]:
    """Keep the round's dropped passages that a kept passage about the question's subject links to: a kept
    passage whose title the question names, and whose text names the dropped passage's title (rag.answer.links).
    The bridge of a two-hop question shares few words with it ("the woman who portrayed Corliss Archer in Kiss
    and Tell" -> Shirley Temple), so word overlap drops it. Another passage of the subject's own article (the same
    title: SQuAD's paragraphs) is not a link. Returns the ids kept this way."""
    kept = [pid for pid, f in found.items() if f.get("kept")]
    titles = [str(found[pid]["hit"].passage.title or "") for pid in kept]
    subject = anchors(question, titles)
    anchor_texts = [found[kept[i]]["hit"].passage.text.lower() for i in subject]
    subjects = {title_name(titles[i]) for i in subject}
    out = []
    for pid in ids:
        if found[pid]["kept"] or not anchor_texts:
            continue
        name = title_name(found[pid]["hit"].passage.title)
        if name not in subjects and any(names(name, text) for text in anchor_texts):
            found[pid]["kept"] = True
            out.append(pid)
    return out


def reader_keeps(state: AgentState, ctx: AgentContext, found: dict, ids: list[str]) -> list[str]:
    """The reader reads the question (and each part of a multi-part question) over the round's best READ_PASSAGES
    passages; the passage it answers each from best is kept whatever the overlap test said. So is the passage of
    the sentence that answers a why or relation question (rag.answer.sentence_pick), which the span reader cannot
    read.
    Each read passage records its margin for the question. Returns the ids it rescued."""
    if ctx.reader is None or not ids:
        return []
    from rag.answer.reader import NULL_MARGIN
    from rag.answer.reading import READ_PASSAGES, best_spans
    from rag.answer.sentence_pick import pick

    new = set(ids)
    order = [pid for pid in ranked_ids({**state, "found": found}) if pid in new][:READ_PASSAGES]
    passages = [
        {"n": j + 1, "id": pid, "title": found[pid]["hit"].passage.title, "text": found[pid]["hit"].passage.text}
        for j, pid in enumerate(order)
    ]
    parts = state["sub_questions"] if state["mode"] == "multi-part" else []
    rescued = []
    for target in [state["question"], *parts]:
        spans = best_spans(ctx.reader, target, passages)
        if target == state["question"]:
            for sp, p in spans:
                found[p["id"]]["reader"] = round(sp.margin, 3)
        best = spans[0][1]["id"] if spans and spans[0][0].margin >= NULL_MARGIN else None
        typed = pick(target, passages, READ_PASSAGES)
        for pid in (best, typed["passage"]["id"] if typed else None):
            if pid and not found[pid]["kept"]:
                found[pid]["kept"] = True
                rescued.append(pid)
    return rescued


def route(state: AgentState, ctx: AgentContext) -> str:
    """After grading: rewrite when nothing was ever kept, hop when a multi-hop plan is on its first hop and the
    learned decision (rag.agent.multihop) says the question is multi-hop, else answer (also once max_steps rounds
    have run). Without the model's weights every planned hop runs."""
    kept_any = any(state["found"][pid]["kept"] for pid in state["last_round"])
    steps_left = state["round"] < ctx.max_steps
    if not kept_any and steps_left and not any(f["kept"] for f in state["found"].values()) and new_rewrite(state):
        return "rewrite"
    if state["plan_hop"] and state["hop"] == 1 and steps_left and wants_hop(state, ctx):
        return "hop"
    return "answer"


def wants_hop(state: AgentState, ctx: AgentContext) -> bool:
    """Whether the planned second hop runs: the question's multi-hop probability reaches the threshold."""
    probability = state.get("hop_probability")
    return probability is None or probability >= effective_threshold(ctx.hop_threshold)


def new_rewrite(state: AgentState) -> bool:
    """True when the next rewrite would search something not searched yet (for the question "x" every rewrite was
    "x" again: four identical rounds)."""
    steps = state.get("steps", [])
    tried = {" ".join(q.lower().split()) for s in steps if s.get("node") == "retrieve" for q in s.get("queries", [])}
    if not tried:
        return True
    query = rewrite_query(state["question"], state.get("rewrites", 0), state.get("sub_questions", []))
    return " ".join(query.lower().split()) not in tried


def rewrite(state: AgentState, ctx: AgentContext) -> dict:
    """A new search for the next round, because nothing retrieved so far was relevant."""
    query = rewrite_query(state["question"], state["rewrites"], state["sub_questions"])
    step = {"node": "rewrite", "reason": "no retrieved passage was relevant", "query": query}
    return {"pending": [{"query": query, "tier": 0}], "rewrites": state["rewrites"] + 1, "steps": [step]}


def hop(state: AgentState, ctx: AgentContext) -> dict:
    """The second hop: bridge queries and entity lookups built from the best kept first-hop passages."""
    first = [pid for pid in ranked_ids(state) if state["found"][pid]["kept"]][:HOP_FROM]
    kept = [state["found"][pid]["hit"].passage for pid in first]
    queries = bridge_queries(state["question"], state["sub_questions"], state["bridge_template"], kept)
    lookups = []
    if ctx.linker:
        for p in kept:
            ids = ctx.linker.mentions(p.text, exclude={p.id})
            if ids:
                lookups.append({"source": LOOKUP_SOURCE.format(p.title), "ids": ids, "tier": 1})
    step = {
        "node": "hop",
        "reason": "second hop from first-hop findings",
        "from": [p.title for p in kept],
        "queries": queries,
        "lookups": [lk["source"] for lk in lookups],
    }
    return {"hop": 2, "pending": [{"query": q, "tier": 2} for q in queries], "lookups": lookups, "steps": [step]}


def after_hop(state: AgentState, ctx: AgentContext | None = None) -> str:
    """Retrieve again when the hop found something to search or look up; otherwise answer."""
    return "retrieve" if state["pending"] or state["lookups"] else "answer"


def answer(state: AgentState, ctx: AgentContext) -> dict:
    """Answer from the best kept passages with [n] citations that match passages.
    A backend that fails or answers nothing is replaced by the extractive one, with a warning."""
    context = [pid for pid in ranked_ids(state) if state["found"][pid]["kept"]][:MAX_CONTEXT]
    passages = [
        {
            "n": j + 1,
            "id": pid,
            "title": state["found"][pid]["hit"].passage.title,
            "text": state["found"][pid]["hit"].passage.text,
            "score": float(state["found"][pid]["hit"].score),
        }
        for j, pid in enumerate(context)
    ]
    passages, flag_warnings, flagged = screen_passages(passages)  # planted instructions never reach a backend
    mode = state["mode"]
    if state["plan_hop"] and state["hop"] == 1 and mode == "multi-hop":
        mode = "direct"  # the second hop was skipped: one round found the answer
    if not passages:
        closest = _closest(state)
        step = {"node": "answer", "backend": "none", "citations": [c["id"] for c in closest]}
        text = nothing_found_answer(state["question"]) + (" The closest passage is [1]." if closest else "")
        return {"answer": text, "citations": closest, "spans": [], "mode": mode, "steps": [step], "abstained": True}
    answerable = None
    if ctx.abstainer is not None and ctx.reader is not None:
        # a multi-part question is answerable when one of its parts is: each part is read on its own
        targets = state["sub_questions"] if mode == "multi-part" and state["sub_questions"] else [state["question"]]
        found = [ctx.abstainer.passages_probability(t, passages, ctx.reader) for t in targets]
        answerable = max((p for p in found if p is not None), default=None)
    if answerable is not None and answerable < ctx.abstainer.threshold:
        step = {"node": "answer", "backend": "abstain", "answerable": answerable, "citations": []}
        if flag_warnings:
            step["warnings"] = flag_warnings
        return {
            "answer": abstention_answer(passages),  # rag.answer.abstain
            "citations": [],
            "spans": [],
            "mode": mode,
            "steps": [step],
            "warnings": flag_warnings,
            "abstained": True,
        }
    subs = list(state["sub_questions"])
    if mode != "multi-part" and state.get("hop_reason") in ("bridge", "chain", "long"):
        subs = []  # one question asked in steps: answer it, not its pieces (a multi-part question's parts stay)
    titles, texts = [p["title"] for p in passages], [p["text"] for p in passages]
    linked = subject_links(state["question"], titles, texts, fallback_first=False)[1]
    if (state["hop"] == 2 or linked) and ctx.reader is not None:  # two passages answer it: read them in pairs
        from rag.answer.reading import PairReader

        ctx = replace(ctx, reader=PairReader(ctx.reader))
    reserve, reserve_warnings, reserve_flagged = [], [], []
    if hasattr(ctx.backend, "answer_spans"):  # only the extractive backend reads the reserve: screen it for that one
        reserve, reserve_warnings, reserve_flagged = screen_passages(reserve_passages(state, ctx, context))
    text, spans, used, warnings = _answer_with_fallback(ctx, state["question"], passages, subs, reserve)
    # nor leave in an answer, whichever backend wrote it (a quote of a passage the screen passed stays)
    text, scrubbed = scrub_answer(text, [p["text"] for p in passages + reserve])
    warnings = (
        flag_warnings
        + warnings
        + ([f"{scrubbed} instruction-like sentence(s) removed from the answer"] if scrubbed else [])
    )
    cited_reserve = [p for p in reserve if f"[{p['n']}]" in text]  # a reserve passage is cited only when quoted
    text, citations, cite_warn = attach_citations(text, passages + cited_reserve)
    cited = {c["id"] for c in citations}
    warnings += cite_warn + [w for w, pid in zip(reserve_warnings, reserve_flagged) if pid in cited]
    flagged = flagged + [pid for pid in reserve_flagged if pid in cited]
    number = {c["id"]: c["n"] for c in citations}
    spans = [{**sp, "n": number[sp["id"]]} for sp in spans if sp["id"] in number]
    step = {"node": "answer", "backend": used.name + ("+reader" if spans else ""), "citations": list(number)}
    if answerable is not None:
        step["answerable"] = answerable
    if flagged:
        step["flagged"] = flagged
    if warnings:
        step["warnings"] = warnings
    return {
        "answer": text,
        "citations": citations,
        "spans": spans,
        "mode": mode,
        "steps": [step],
        "warnings": warnings,
        "abstained": text.startswith(NOT_FOUND),
    }


def reserve_passages(state: AgentState, ctx: AgentContext, context: list[str]) -> list[dict]:
    """For a long answer: the passages among the RESERVE_FROM best retrieved that the grader dropped, numbered after
    the context. Only the extractive backend's learned sentence ranker reads them (rag.answer.sentence_rank): word
    overlap drops a passage that answers in other words ("Pick the smallest prefix ..." for "how should I decide
    where to truncate?"). A short answer reads none."""
    if ctx.short_answer:
        return []
    ids = [pid for pid in ranked_ids(state)[:RESERVE_FROM] if pid not in context and not state["found"][pid]["kept"]]
    return [
        {
            "n": len(context) + j + 1,
            "id": pid,
            "title": state["found"][pid]["hit"].passage.title,
            "text": state["found"][pid]["hit"].passage.text,
            "score": float(state["found"][pid]["hit"].score),
            "reserve": True,
        }
        for j, pid in enumerate(ids)
    ]


def _closest(state: AgentState) -> list[dict]:
    """The best retrieved passage as a citation (for a "not found" answer), or none when nothing was retrieved."""
    ranked = ranked_ids(state)
    if not ranked:
        return []
    hit = state["found"][ranked[0]]["hit"]
    return [{"n": 1, "id": hit.passage.id, "title": hit.passage.title, "score": round(float(hit.score), 4)}]


def ranked_ids(state: AgentState) -> list[str]:
    """All retrieved ids, best first: by tier (first search's top hits, entity lookups, second-hop and other
    searches, the rest of the first search), and within a tier rank by rank across its lists."""
    out: dict[str, None] = {}
    for tier in sorted({lst["tier"] for lst in state["lists"]}):
        group = [lst["ids"] for lst in state["lists"] if lst["tier"] == tier]
        for rank in range(max(len(ids) for ids in group)):
            for ids in group:
                if rank < len(ids):
                    out.setdefault(ids[rank], None)
    return list(out)


def attach_citations(text: str, passages: list[dict]) -> tuple[str, list[dict], list[str]]:
    """Map [n] in the answer to passages; drop numbers that match none; cite the context if the backend did not;
    renumber the markers in order of appearance."""
    by_n = {p["n"]: p for p in passages}
    warnings = []
    bad = sorted({int(n) for n in re.findall(r"\[(\d+)\]", text)} - set(by_n))
    if bad:
        warnings.append(f"answer cited unknown passages {bad}; those markers were removed")
        text = re.sub(r"\[(\d+)\]", lambda m: m.group(0) if int(m.group(1)) in by_n else "", text)
    cited = [int(n) for n in dict.fromkeys(re.findall(r"\[(\d+)\]", text))]
    if not cited and passages:
        cited = [p["n"] for p in passages[:3]]
        text = text.rstrip() + " " + "".join(f"[{n}]" for n in cited)
    order = {old: new for new, old in enumerate(cited, 1)}  # numbered in order of appearance: [1], [2], ...
    text = re.sub(
        r"\[(\d+)\]", lambda m: f"[{order[int(m.group(1))]}]" if int(m.group(1)) in order else m.group(0), text
    )
    citations = [
        {"n": order[n], "id": by_n[n]["id"], "title": by_n[n]["title"], "score": round(by_n[n]["score"], 4)}
        for n in cited
    ]
    return text, citations, warnings


def _answer_with_fallback(
    ctx: AgentContext, question: str, passages: list[dict], subs: list[str], reserve=()
) -> tuple[str, Any, list[str]]:
    """(answer text, the reader spans it quotes, the backend that wrote it, warnings). Only the extractive backend
    reads the reserve passages (reserve_passages); a model backend answers from the context alone."""
    try:
        spans = []
        if hasattr(ctx.backend, "answer_spans"):
            text, spans = ctx.backend.answer_spans(
                question,
                passages,
                subs,
                short=ctx.short_answer,
                reader=ctx.reader,
                reserve=list(reserve),
                without=ctx.without,
            )
        else:
            text = ctx.backend.answer(question, passages, subs, short=ctx.short_answer)
        if not text.strip():
            raise RuntimeError("empty answer")
        return text, spans, ctx.backend, []
    except Exception as exc:
        used = ExtractiveBackend()
        warning = (
            f"llm backend '{ctx.backend.name}' failed ({type(exc).__name__}: {str(exc)[:120]}); "
            "answered with extractive"
        )
        if ctx.reader is not None:
            text, spans = used.answer_spans(
                question,
                passages,
                subs,
                short=ctx.short_answer,
                reader=ctx.reader,
                reserve=list(reserve),
                without=ctx.without,
            )
            return text, spans, used, [warning]
        return used.answer(question, passages, subs, short=ctx.short_answer), [], used, [warning]


def _hit_brief(hit) -> dict:
    return {"id": hit.passage.id, "title": hit.passage.title, "score": round(float(hit.score), 4)}
