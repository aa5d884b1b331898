"""The agent: a LangGraph StateGraph that plans, retrieves, grades, rewrites or hops, and answers with citations.

    analyze ──▶ retrieve ──▶ grade ──┬──▶ answer ──▶ END
                   ▲                 ├──▶ rewrite ──┐   (nothing relevant kept, steps left)
                   │                 └──▶ hop ──────┤   (multi-hop plan, second hop not done yet)
                   └────────────────────────────────┘

The nodes are plain functions in rag.agent.nodes; this module compiles the graph once, binds each run's nodes to
its AgentContext (through LangGraph's config), times them, streams their steps to on_step, and runs the graph
(run_agent).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from langchain_core.runnables import RunnableConfig  # LangGraph reads the nodes' annotations to pass the config

from rag.agent.nodes import (
    LOOKUP_SOURCE,
    OPENING_SOURCE,
    AgentContext,
    AgentState,
    after_hop,
    analyze,
    answer,
    grade,
    hop,
    ranked_ids,
    retrieve,
    rewrite,
    route,
)
from rag.agent.settings import DEFAULT_AGENT, AgentSettings
from rag.agent.tools import title_linker
from rag.answer.abstain import default_abstainer
from rag.answer.llm import ExtractiveBackend, experimental_warning, get_backend
from rag.answer.reading import MemoReader
from rag.answer.sentence_rank import sentence_vectors
from rag.config import RagError, built_once, check_question
from rag.encoders import minilm_query_encoder
from rag.retrieve import RetrievalSettings, Retriever, open_retriever
from rag.screen.guard import guard_step, passed_text, screened_text

NODES = {"analyze": analyze, "retrieve": retrieve, "grade": grade, "rewrite": rewrite, "hop": hop, "answer": answer}


BUILDS_QUERIES = ("hop",)  # nodes that build searches from kept passages: they see the passages screened
# nodes whose steps are built from the question alone (its words and the planner's templates): no passage text
# reaches them, so their steps are not screened
QUESTION_ONLY = ("analyze", "rewrite")
OWN_WORDING = f"{LOOKUP_SOURCE.format('the question')} {OPENING_SOURCE.format('')}"  # the agent's own words in steps


def screened_kept(state: AgentState) -> AgentState:
    """The state with each kept passage's text screened (rag.screen.guard), so that queries built from passages
    never carry an instruction planted in one (the answer node screens again and reports what it removed)."""
    found = {
        pid: {
            **f,
            "hit": replace(
                f["hit"],
                passage=replace(f["hit"].passage, text=screened_text(f["hit"].passage.text, f["hit"].passage.title)),
            ),
        }
        if f.get("kept")
        else f
        for pid, f in state["found"].items()
    }
    return {**state, "found": found}


def kept_text(screened: AgentState) -> str:
    """What the screen has passed of a screened state's kept passages (rag.screen.guard.passed_text): the words a
    query built from them may carry without a second look."""
    kept = [f["hit"].passage for f in screened["found"].values() if f.get("kept")]
    return passed_text([p.text for p in kept], [p.title for p in kept])


@dataclass
class Run:
    """What one run of the compiled graph binds its nodes to: the context, the node timings (ms) it accumulates,
    and the step callback. It travels in LangGraph's config, so the graph is compiled once per process."""

    ctx: AgentContext
    on_step: Callable | None = None
    timings: dict = field(default_factory=dict)


def timed(name: str, node: Callable) -> Callable:
    """node as LangGraph calls it, bound to the run in its config: adds its time to timings[name_ms], stamps and
    streams its steps."""

    def run(state: AgentState, config: RunnableConfig) -> dict:
        bound: Run = config["configurable"]["run"]
        t0 = time.perf_counter()
        seen = screened_kept(state) if name in BUILDS_QUERIES else state
        update = node(seen, bound.ctx)
        ms = (time.perf_counter() - t0) * 1e3
        bound.timings[f"{name}_ms"] = bound.timings.get(f"{name}_ms", 0.0) + ms
        if name not in QUESTION_ONLY:
            passed = f"{OWN_WORDING} {kept_text(seen)}" if name in BUILDS_QUERIES else OWN_WORDING
            steps = [guard_step(step, state.get("question", ""), passed) for step in update.get("steps", [])]
            update = {**update, "steps": steps}
        for step in update["steps"]:
            step["ms"] = round(ms, 1)
            if bound.on_step:
                bound.on_step(step)
        return update

    return run


def routed(state: AgentState, config: RunnableConfig) -> str:
    """rag.agent.nodes.route with the run's context (the grade node's outgoing edge)."""
    return route(state, config["configurable"]["run"].ctx)


@built_once()
def compiled_graph():
    """The agent graph, compiled once (a run passes its Run in config["configurable"]["run"])."""
    from langgraph.graph import END, START, StateGraph

    g = StateGraph(AgentState)
    for name, node in NODES.items():
        g.add_node(name, timed(name, node))
    g.add_edge(START, "analyze")
    g.add_edge("analyze", "retrieve")
    g.add_edge("retrieve", "grade")
    g.add_conditional_edges("grade", routed, {"rewrite": "rewrite", "hop": "hop", "answer": "answer"})
    g.add_edge("rewrite", "retrieve")
    g.add_conditional_edges("hop", after_hop, {"retrieve": "retrieve", "answer": "answer"})
    g.add_edge("answer", END)
    return g.compile()


def run_agent(
    question: str,
    settings: RetrievalSettings | None = None,
    agent: AgentSettings = DEFAULT_AGENT,
    *,
    backend=None,
    on_step: Callable | None = None,
    retriever: Retriever | None = None,
    replay: Sequence[AgentSettings] = (),
) -> dict:
    """Answer a question with the agent graph.

    settings: a rag.retrieve.RetrievalSettings; its k is the number of hits per search (a retriever passed in keeps
      its own mode, fusion and weight). Default: that retriever's own settings, else RetrievalSettings().
    agent: rag.agent.settings.AgentSettings (the LLM backend by name, the bound on retrieval rounds, ...).
    backend: an already-built LLM backend, reused as is (evaluations build one per run); overrides agent.llm.
    retriever: an already-open rag.retrieve.Retriever; otherwise open_retriever(settings), the shared cache.
    Returns {question, answer, citations, spans, steps, timings, warnings, mode, sub_questions, rounds, retrieved,
      abstained};
    spans are the reader's answer spans, {n (the citation), id, text, start, end (characters in the passage)};
    on_step(step) is called as each node finishes.
    replay: other answer settings (an ablation's: without, use_abstain) whose answer step is run again on the same
      retrieved and graded passages; result["replayed"] holds {answer, citations, abstained, warnings, steps} for each,
      in order. Settings that change the plan (max_steps, use_lookup, ...) cannot be replayed: run them anew."""
    t0 = time.perf_counter()
    question = check_question(question)
    if settings is None:
        settings = retriever.settings if retriever is not None else RetrievalSettings()
    settings = settings.validated()
    agent = agent.validated()
    if retriever is None:
        retriever = open_retriever(settings)
    t_open = time.perf_counter()
    chosen, warnings = _backend(backend if backend is not None else agent.llm)
    if backend is None and isinstance(chosen, ExtractiveBackend) and retriever.encoder is not None:
        # the extractive backend asked for by name ranks sentences by the retriever's own encoder too; the shared
        # MiniLM goes through the vector cache the sentence ranker reads, so that a sentence is encoded once
        shared = retriever.encoder is minilm_query_encoder()
        chosen = ExtractiveBackend(
            chosen.max_sentences,
            embed=sentence_vectors if shared else lambda texts: retriever.encoder.encode(texts),
            reader=chosen.reader,
            ranked_sentence=chosen.ranked_sentence,
        )
    reader = getattr(chosen, "reader", None) if agent.use_reader else None
    steps = [{"node": "backend", "warning": w} for w in warnings]
    if on_step:
        for step in steps:
            on_step(step)
    ctx = AgentContext(
        retriever,
        chosen,
        k=settings.k,
        max_steps=agent.max_steps,
        short_answer=agent.short_answer,
        linker=title_linker(retriever.corpus) if agent.use_lookup else None,
        reader=MemoReader(reader) if reader is not None else None,
        hop_threshold=agent.hop_threshold,
        abstainer=default_abstainer() if agent.use_abstain else None,
        without=tuple(agent.without),
    )
    bound = Run(ctx, on_step)
    state = compiled_graph().invoke(
        {"question": question, "steps": [], "warnings": []},
        config={"recursion_limit": 4 * agent.max_steps + 12, "configurable": {"run": bound}},
    )
    replayed = [replay_answer(state, ctx, variant, agent) for variant in replay]
    found = state["found"]
    retrieved = [
        {
            "id": pid,
            "title": found[pid]["hit"].passage.title,
            "score": round(float(found[pid]["hit"].score), 4),
            "round": found[pid]["round"],
            "via": found[pid]["via"],
            "kept": bool(found[pid]["kept"]),
        }
        for pid in ranked_ids(state)
    ]
    timings = {key: round(v, 1) for key, v in bound.timings.items()}
    timings["open_ms"] = round((t_open - t0) * 1e3, 1)
    timings["total_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
    return {
        "question": question,
        "answer": state["answer"],
        "citations": state["citations"],
        "spans": state.get("spans", []),
        "steps": steps + state["steps"],
        "timings": timings,
        "warnings": warnings + state["warnings"],
        "mode": state["mode"],
        "sub_questions": state["sub_questions"],
        "rounds": state["round"],
        "retrieved": retrieved,
        "abstained": bool(state.get("abstained")),
        **({"replayed": replayed} if replay else {}),
    }


def replay_answer(state: dict, ctx: AgentContext, variant: AgentSettings, ran: AgentSettings) -> dict:
    """The answer step run again on a finished run's state with another answer setting (an ablation)."""
    variant = variant.validated()
    planned = ("llm", "max_steps", "use_lookup", "use_reader", "hop_threshold", "short_answer")
    changed = [name for name in planned if getattr(variant, name) != getattr(ran, name)]
    if changed:
        raise RagError(f"cannot replay a change of {', '.join(changed)}: it changes the plan; run the agent anew")
    abstainer = ctx.abstainer if variant.use_abstain else None
    if variant.use_abstain and abstainer is None:
        abstainer = default_abstainer()
    out = answer(state, replace(ctx, without=tuple(variant.without), abstainer=abstainer))
    answered = len(state["steps"][-1].get("warnings", []))  # the run's own answer step is its last
    return {
        "answer": out["answer"],
        "citations": out["citations"],
        "abstained": bool(out.get("abstained")),
        "warnings": state["warnings"][: len(state["warnings"]) - answered] + out.get("warnings", []),
        "steps": out["steps"],
    }


def _backend(llm) -> tuple[object, list[str]]:
    """(backend, warnings): llm itself when it is a built backend; extractive, with a warning, when it cannot load."""
    if not isinstance(llm, str):
        return llm, []
    try:
        note = experimental_warning(llm)
        return get_backend(llm), [note] if note else []
    except RagError:
        raise
    except Exception as exc:
        return ExtractiveBackend(), [
            f"llm backend '{llm}' unavailable ({type(exc).__name__}: {str(exc)[:120]}); using extractive"
        ]
