"""The answer step's ablation: each answer component turned off in turn, on sets it was and was not written for.

Each question is asked once with every component on; the answer step is then run again on the same retrieved and
graded passages with one component off (`run_agent(..., replay=...)`), so every variant reads exactly the same
passages and the comparison costs one retrieval per question.

Sets (any subset):
- docs: documentation folders with their question sets (rag.studies.docs_eval): key fact, right file cited, and
  abstention on absent and on answerable questions;
- builtin: the built-in corpus's question sets (rag.studies.answer_eval.seed_items): key fact;
- squad-open, hotpotqa: short answers over SQuAD paragraphs and HotpotQA (answer F1), the questions
  rag.studies.answer_eval evaluates.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rag.agent.settings import COMPONENTS, DEFAULT_AGENT, AgentSettings
from rag.config import RagError
from rag.retrieve import RetrievalSettings

ALL = "all on"
SETS = ("docs", "builtin", "squad-open", "hotpotqa")


def variants(agent: AgentSettings) -> dict[str, AgentSettings]:
    """The replayed variants: every COMPONENT off in turn, and the abstention off."""
    out = {f"without {name}": replace(agent, without=(name,)) for name in COMPONENTS}
    out["without abstain"] = replace(agent, use_abstain=False)
    return out


def ask_all(retriever, items: list[dict], agent: AgentSettings, backend=None, progress=None, name="") -> dict:
    """{variant: [(item, result, ms)]} for ALL and each replayed variant."""
    from rag.agent import run_agent

    replayed = variants(agent)
    out: dict[str, list] = {ALL: [], **{k: [] for k in replayed}}
    for i, item in enumerate(items):
        t0 = time.perf_counter()
        result = run_agent(
            item["question"],
            retriever.settings,
            agent,
            backend=backend,
            retriever=retriever,
            replay=list(replayed.values()),
        )
        ms = (time.perf_counter() - t0) * 1e3
        out[ALL].append((item, result, ms))
        for label, again in zip(replayed, result["replayed"]):
            out[label].append((item, {**result, **again}, ms))
        if progress:
            progress(name, i + 1, len(items))
    return out


def docs_table(pairs, settings: RetrievalSettings, agent: AgentSettings, progress=None, done=None) -> dict:
    """{folder: {variant: summary}} over documentation folders (docs_eval's figures); done(name, table) is called
    as each folder finishes."""
    from rag.retrieve import open_retriever
    from rag.studies.docs_eval import load_doc_questions, score_answer, summarise_rows

    out = {}
    for folder, qfile in pairs:
        folder = Path(folder)
        if not folder.is_dir():
            raise RagError(f"no such folder: {folder}")
        items = load_doc_questions(qfile)
        s = replace(settings, corpus=str(folder)).validated()
        runs = ask_all(open_retriever(s), items, agent, progress=progress, name=folder.name)
        out[folder.name] = {
            label: summarise_rows([score_answer(item, result, ms) for item, result, ms in rows])
            for label, rows in runs.items()
        }
        if done:
            done(folder.name, out[folder.name])
    return out


def answer_sets_table(
    sets, settings: RetrievalSettings, agent: AgentSettings, builtin_files, limit, progress=None, done=None
):
    """{set: {variant: summary}} for builtin (key fact) and squad-open / hotpotqa (short-answer F1); done(name,
    table) is called as each set finishes."""
    from rag.answer.llm import ExtractiveBackend
    from rag.answer.reader import default_reader
    from rag.retrieve import Retriever
    from rag.studies.agent_eval import TOP
    from rag.studies.answer_eval import hotpot_items, score_agent_result, seed_items, squad_open_items, summarise

    out = {}

    def table(name, retriever, items, ag, keys):
        backend = ExtractiveBackend(embed=retriever.encoder.encode if retriever.encoder else None, reader=reader)
        runs = ask_all(retriever, items, ag, backend=backend, progress=progress, name=name)
        out[name] = {
            label: summarise([score_agent_result(item, result, ms) for item, result, ms in rows], keys)
            for label, rows in runs.items()
        }
        if done:
            done(name, out[name])

    reader = default_reader()
    if "builtin" in sets:
        items = [it for f in builtin_files for it in seed_items(f)]
        table("builtin", Retriever.open(replace(settings, corpus="builtin").validated()), items, agent, ("key_fact",))
    short = replace(agent, short_answer=True)
    if "squad-open" in sets:
        retriever = Retriever.open(replace(settings, corpus="squad", k=TOP).validated())
        table("squad-open", retriever, squad_open_items(limit), short, ("em", "f1"))
    if "hotpotqa" in sets:
        corpus, items = hotpot_items(limit)
        retriever = Retriever.open(replace(settings, corpus="hotpotqa", k=TOP).validated(), corpus=corpus)
        table("hotpotqa", retriever, items, short, ("em", "f1"))
    return out


def ablate(
    sets=SETS,
    *,
    docs: list[tuple[Path, Path]] = (),
    builtin_files: list[Path] = (),
    limit: int = 100,
    settings: RetrievalSettings | None = None,
    agent: AgentSettings = DEFAULT_AGENT,
    progress: Callable[[str, int, int], None] | None = None,
    done: Callable[[str, dict], None] | None = None,
) -> dict:
    """{settings, sets: {set or folder: {variant: summary}}}; done(name, table) as each set or folder finishes."""
    for s in sets:
        if s not in SETS:
            raise RagError(f"unknown set '{s}'; sets: {', '.join(SETS)}")
    if "docs" in sets and not docs:
        raise RagError("the docs set needs --docs DIR --questions FILE")
    settings = settings or RetrievalSettings()  # validated per corpus: a backend left unset may fall back
    agent = agent.validated()
    result = {}
    if "docs" in sets:
        result.update(docs_table(docs, settings, agent, progress, done))
    result.update(answer_sets_table(sets, settings, agent, builtin_files, limit, progress, done))
    return {
        "settings": {**settings.validated().as_dict(), "max_steps": agent.max_steps, "limit": limit},
        "components": [*COMPONENTS, "abstain"],
        "sets": result,
    }


METRICS = {  # the figures a report shows per set kind
    "docs": ("key_fact", "cited_right", "abstained_absent", "abstained_answerable"),
    "answers": ("key_fact", "f1"),
}


def report_lines(result: dict) -> list[str]:
    """A Markdown table per set: each variant's figures and their change from all components on."""
    lines = ["# Answer-step ablation", ""]
    for name, table in result["sets"].items():
        base = table[ALL]
        keys = [k for k in METRICS["docs"] + METRICS["answers"] if base.get(k) is not None]
        lines += [f"## {name}", "", "| variant | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
        for label, summary in table.items():
            cells = []
            for k in keys:
                v = summary.get(k)
                delta = "" if label == ALL or v is None else f" ({v - base[k]:+.3f})"
                cells.append("-" if v is None else f"{v:.3f}{delta}")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines
