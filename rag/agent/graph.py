"""The agent: a LangGraph StateGraph that plans, retrieves, grades, rewrites or hops, and answers with citations.

    analyze ──▶ retrieve ──▶ grade ──┬──▶ answer ──▶ END
                   ▲                 ├──▶ rewrite ──┐   (nothing relevant kept, steps left)
                   │                 └──▶ hop ──────┤   (multi-hop plan, second hop not done yet)
                   └────────────────────────────────┘

A "step" is one retrieval round (one or more queries searched together); --max-steps bounds them.
Each round also runs the entity lookup (rag.agent.tools.TitleLinker): passages whose titles are named in the
question (first round) or in the best first-hop passages (second hop). Bridge questions get their second hop
from what the first hop found: the question plus each first-hop passage's title and new entities.
All retrieved passages are ranked by tier (see _ranked); all_gold@10 in rag.agent_eval scores that list.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, Callable, TypedDict

from rag.agent.planner import HOP_FROM, bridge_queries, nothing_found_answer, plan_question, rewrite_query
from rag.agent.text import is_injection, overlap
from rag.config import RagError, check_question

FIRST_TIER = 7  # how many of the first search's hits rank ahead of lookups and second-hop hits
KEEP_OVERLAP = 0.34  # share of the query's content words a passage must contain to count as relevant
KEEP_OVERLAP_TOP = 0.2  # a lower bar for the first hit of a query
MAX_CONTEXT = 8  # passages handed to the answer step


class AgentState(TypedDict, total=False):
    question: str
    mode: str
    plan_hop: bool
    sub_questions: list[str]
    bridge_template: str | None
    calc: dict | None
    pending: list[dict]  # searches for the next round: {"query", "tier"}
    lookups: list[dict]  # entity lookups for the next round: {"source", "ids", "tier"}
    round: int
    hop: int
    found: dict  # passage id -> {"hit", "round", "rank", "query", "via", "kept", "overlap"}
    lists: list  # every ranked list of the run: {"tier", "source", "ids"}; _ranked merges them
    last_round: list
    rewrites: int
    answer: str
    citations: list
    steps: Annotated[list, operator.add]
    warnings: Annotated[list, operator.add]


def _hit_brief(hit) -> dict:
    return {"id": hit.passage.id, "title": hit.passage.title, "score": round(float(hit.score), 4)}


def build_graph(retriever, backend, *, k: int, max_steps: int, on_step: Callable | None = None,
                short_answer: bool = False, use_lookup: bool = True):
    """Compile the agent graph over a rag.retrieve.Retriever and an LLM backend (see rag.agent.llm)."""
    from langgraph.graph import END, START, StateGraph

    from rag.agent.llm import ExtractiveBackend
    from rag.agent.tools import title_linker
    from rag.retrieve import Hit

    timings: dict[str, float] = {}
    linker = title_linker(retriever.corpus) if use_lookup else None
    by_id = retriever.corpus.passage_by_id

    def node(name: str, fn):
        def run(state: AgentState) -> dict:
            t0 = time.perf_counter()
            update = fn(state)
            ms = (time.perf_counter() - t0) * 1e3
            timings[f"{name}_ms"] = timings.get(f"{name}_ms", 0.0) + ms
            for step in update.get("steps", []):
                step["ms"] = round(ms, 1)
                if on_step:
                    on_step(step)
            return update
        return run

    def analyze(state: AgentState) -> dict:
        plan = plan_question(state["question"])
        pending = [{"query": q, "tier": 0} for q in plan["queries"]]
        pending += [{"query": q, "tier": 2} for q in plan["extra_queries"]]
        mentioned = linker.mentions(state["question"]) if linker else []
        lookups = [{"source": "titles named in the question", "ids": mentioned, "tier": 1}] if mentioned else []
        step = {"node": "analyze", "mode": plan["mode"], "sub_questions": plan["sub_questions"],
                "calculator": plan["calc"]["text"] if plan["calc"] else None,
                "queries": [p["query"] for p in pending], "lookups": mentioned}
        return {"mode": plan["mode"], "plan_hop": plan["hop"], "sub_questions": plan["sub_questions"], "calc": plan["calc"],
                "bridge_template": plan["bridge_template"], "pending": pending, "lookups": lookups, "round": 0,
                "hop": 1, "found": {}, "lists": [], "rewrites": 0, "steps": [step]}

    def retrieve(state: AgentState) -> dict:
        pending, lookups = state["pending"], state.get("lookups") or []
        rnd = state["round"] + 1
        results = retriever.search_many([p["query"] for p in pending], k) if pending else []
        found, lists, new_ids = dict(state["found"]), list(state["lists"]), []

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
        for lk in lookups:
            lists.append({"tier": lk["tier"], "source": lk["source"], "ids": lk["ids"]})
            for rank, pid in enumerate(lk["ids"]):
                add(pid, Hit(by_id[pid], 0.0), rank, state["question"], "lookup")
        step = {"node": "retrieve", "round": rnd, "queries": [p["query"] for p in pending],
                "lookups": [lk["source"] for lk in lookups],
                "hits": [_hit_brief(found[i]["hit"]) for i in new_ids[: 2 * k]], "new": len(new_ids)}
        return {"found": found, "lists": lists, "last_round": new_ids, "round": rnd, "pending": [], "lookups": [],
                "steps": [step]}

    def grade(state: AgentState) -> dict:
        found = {i: dict(v) for i, v in state["found"].items()}
        ids = state["last_round"]
        warnings, judged_by = [], "overlap"
        for pid in ids:
            f = found[pid]
            p = f["hit"].passage
            ov = overlap(f["query"], f"{p.title} {p.text}")
            f["overlap"] = round(ov, 3)
            f["kept"] = ov >= KEEP_OVERLAP or (f["rank"] == 0 and ov >= KEEP_OVERLAP_TOP) or f["via"] == "lookup"
            if is_injection(p.text):
                warnings.append(f"passage {pid} contains instruction-like text; it was treated as data")
        if getattr(backend, "can_judge", False) and ids:
            passages = [{"n": j + 1, "id": pid, "title": found[pid]["hit"].passage.title,
                         "text": found[pid]["hit"].passage.text} for j, pid in enumerate(ids)]
            try:
                verdict = backend.judge(state["question"], passages)
                if verdict is not None:
                    judged_by = f"overlap+{backend.name}"
                    for pid, ok in zip(ids, verdict):  # the LLM may rescue or reject what overlap decided
                        found[pid]["kept"] = bool(ok) or (found[pid]["kept"] and found[pid]["overlap"] >= 0.6)
            except Exception as exc:  # a failing judge is no judge
                warnings.append(f"{backend.name} could not grade passages ({type(exc).__name__}); used overlap only")
        kept = [pid for pid in ids if found[pid]["kept"]]
        step = {"node": "grade", "round": state["round"], "judged_by": judged_by,
                "kept": [{"id": pid, "overlap": found[pid]["overlap"]} for pid in kept],
                "dropped": len(ids) - len(kept)}
        if warnings:
            step["warnings"] = warnings
        return {"found": found, "steps": [step], "warnings": warnings}

    def route(state: AgentState) -> str:
        kept_any = any(state["found"][pid]["kept"] for pid in state["last_round"])
        steps_left = state["round"] < max_steps
        if not kept_any and steps_left and not any(f["kept"] for f in state["found"].values()):
            return "rewrite"
        if state["plan_hop"] and state["hop"] == 1 and steps_left:
            return "hop"
        return "answer"

    def rewrite(state: AgentState) -> dict:
        query = rewrite_query(state["question"], state["rewrites"], state["sub_questions"])
        step = {"node": "rewrite", "reason": "no retrieved passage was relevant", "query": query}
        return {"pending": [{"query": query, "tier": 0}], "rewrites": state["rewrites"] + 1, "steps": [step]}

    def hop(state: AgentState) -> dict:
        first = [pid for pid in _ranked(state) if state["found"][pid]["kept"]][:HOP_FROM]
        kept = [state["found"][pid]["hit"].passage for pid in first]
        queries = bridge_queries(state["question"], state["sub_questions"], state["bridge_template"], kept)
        lookups = []
        if linker:
            for p in kept:
                ids = [i for i in linker.mentions(p.text, exclude={p.id})]
                if ids:
                    lookups.append({"source": f"titles named in {p.title}", "ids": ids, "tier": 1})
        step = {"node": "hop", "reason": "second hop from first-hop findings", "from": [p.title for p in kept],
                "queries": queries, "lookups": [lk["source"] for lk in lookups]}
        return {"hop": 2, "pending": [{"query": q, "tier": 2} for q in queries], "lookups": lookups,
                "steps": [step]}

    def after_hop(state: AgentState) -> str:
        return "retrieve" if state["pending"] or state["lookups"] else "answer"

    def answer(state: AgentState) -> dict:
        ranked = _ranked(state)
        context = [pid for pid in ranked if state["found"][pid]["kept"]][:MAX_CONTEXT]
        calc = state.get("calc")
        passages = [{"n": j + 1, "id": pid, "title": state["found"][pid]["hit"].passage.title,
                     "text": state["found"][pid]["hit"].passage.text,
                     "score": float(state["found"][pid]["hit"].score)} for j, pid in enumerate(context)]
        warnings = []
        if not passages and not calc:
            text = nothing_found_answer(state["question"])
            step = {"node": "answer", "backend": "none", "citations": []}
            return {"answer": text, "citations": [], "steps": [step]}
        notes = []
        if calc:
            source = max(passages, key=lambda p: overlap(calc["topic"], p["title"] + " " + p["text"]), default=None)
            notes.append(calc["text"] + (f" [{source['n']}]" if source else ""))
        # the calculator already answers its part of a multi-part question
        subs = [q for q in state["sub_questions"] if not calc or q != calc.get("part")]
        used = backend
        try:
            text = backend.answer(state["question"], passages, notes, subs, short=short_answer)
            if not text.strip():
                raise RuntimeError("empty answer")
        except Exception as exc:
            used = ExtractiveBackend()
            warnings.append(f"llm backend '{backend.name}' failed ({type(exc).__name__}: {str(exc)[:120]}); "
                            "answered with extractive")
            text = used.answer(state["question"], passages, notes, subs, short=short_answer)
        if calc and notes and not _has_figures(text, calc):
            text = notes[0] + " " + text  # the exact figures must survive a model that dropped them
        text, citations, cite_warn = _attach_citations(text, passages)
        warnings += cite_warn
        step = {"node": "answer", "backend": used.name, "citations": [c["id"] for c in citations]}
        if warnings:
            step["warnings"] = warnings
        return {"answer": text, "citations": citations, "steps": [step], "warnings": warnings}

    g = StateGraph(AgentState)
    for name, fn in (("analyze", analyze), ("retrieve", retrieve), ("grade", grade), ("rewrite", rewrite),
                     ("hop", hop), ("answer", answer)):
        g.add_node(name, node(name, fn))
    g.add_edge(START, "analyze")
    g.add_edge("analyze", "retrieve")
    g.add_edge("retrieve", "grade")
    g.add_conditional_edges("grade", route, {"rewrite": "rewrite", "hop": "hop", "answer": "answer"})
    g.add_edge("rewrite", "retrieve")
    g.add_conditional_edges("hop", after_hop, {"retrieve": "retrieve", "answer": "answer"})
    g.add_edge("answer", END)
    return g.compile(), timings


def _ranked(state: AgentState) -> list[str]:
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


def _has_figures(text: str, calc: dict) -> bool:
    """Whether the answer already states the calculator's main figure (e.g. 38,400,000)."""
    import re

    figures = re.findall(r"\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?", calc["text"])
    main = max(figures, key=len) if figures else ""
    return bool(main) and (main in text or main.replace(",", "") in text)


def _attach_citations(text: str, passages: list[dict]) -> tuple[str, list[dict], list[str]]:
    """Map [n] in the answer to passages; drop numbers that match none; cite the context if the backend did not."""
    import re

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
    citations = [{"n": n, "id": by_n[n]["id"], "title": by_n[n]["title"], "score": round(by_n[n]["score"], 4)}
                 for n in sorted(cited)]
    return text, citations, warnings


_RETRIEVERS: dict[tuple, Any] = {}


def open_retriever(corpus="builtin", encoder="minilm", dim=None, index="flat", reduce="pca", retriever="hybrid"):
    """Retriever.open, cached per settings within this process."""
    from rag.retrieve import Retriever

    key = (str(corpus), encoder, dim, index, reduce, retriever)
    if key not in _RETRIEVERS:
        _RETRIEVERS[key] = Retriever.open(corpus=corpus, encoder=encoder, dim=dim, index=index, reduce=reduce,
                                          mode=retriever)
    return _RETRIEVERS[key]


def run_agent(question: str, *, corpus="builtin", encoder="minilm", dim=None, index="flat", reduce="pca",
              retriever="hybrid", llm="extractive", max_steps=4, k=5, on_step=None, retriever_obj=None,
              backend_obj=None, short_answer=False) -> dict:
    """Answer a question with the agent graph. Returns {question, answer, citations, steps, timings, warnings,
    retrieved}; on_step(step) is called as each node finishes; retriever_obj / backend_obj reuse loaded ones."""
    from rag.agent.llm import ExtractiveBackend, LLM_NAMES, get_backend

    t0 = time.perf_counter()
    question, warning = check_question(question)
    if not isinstance(max_steps, int) or max_steps < 1:
        raise RagError(f"max_steps must be at least 1 (got {max_steps}); try --max-steps 4")
    if not isinstance(k, int) or k < 1:
        raise RagError(f"k must be at least 1 (got {k}); try -k 5")
    if backend_obj is None and llm not in LLM_NAMES:
        raise RagError(f"unknown llm '{llm}'; valid llms: {', '.join(LLM_NAMES)}")
    warnings = [warning] if warning else []
    steps: list[dict] = []
    if warning:
        steps.append({"node": "input", "warning": warning})
        if on_step:
            on_step(steps[-1])
    if retriever_obj is None:
        retriever_obj = open_retriever(corpus, encoder, dim, index, reduce, retriever)
    t_open = time.perf_counter()
    backend = backend_obj
    if backend is None:
        try:
            backend = get_backend(llm)
        except RagError:
            raise
        except Exception as exc:
            backend = ExtractiveBackend()
            msg = f"llm backend '{llm}' unavailable ({type(exc).__name__}: {str(exc)[:120]}); using extractive"
            warnings.append(msg)
            steps.append({"node": "backend", "warning": msg})
            if on_step:
                on_step(steps[-1])
    graph, timings = build_graph(retriever_obj, backend, k=k, max_steps=max_steps, on_step=on_step,
                                 short_answer=short_answer)
    state = graph.invoke({"question": question, "steps": [], "warnings": []},
                         config={"recursion_limit": 4 * max_steps + 12})
    found = state["found"]
    retrieved = [{"id": pid, "title": found[pid]["hit"].passage.title, "score": round(float(found[pid]["hit"].score), 4),
                  "round": found[pid]["round"], "via": found[pid]["via"], "kept": bool(found[pid]["kept"])}
                 for pid in _ranked(state)]
    timings = {key: round(v, 1) for key, v in timings.items()}
    timings["open_ms"] = round((t_open - t0) * 1e3, 1)
    timings["total_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
    return {"question": question, "answer": state["answer"], "citations": state["citations"],
            "steps": steps + state["steps"], "timings": timings, "warnings": warnings + state["warnings"],
            "mode": state["mode"], "sub_questions": state["sub_questions"], "rounds": state["round"],
            "retrieved": retrieved}
