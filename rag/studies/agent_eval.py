"""`rag eval agent`: the agent against single-shot top-10 retrieval, at the same retriever settings.

HotpotQA: all_gold@10 (both gold paragraphs among the first 10 passages the system retrieved; for the agent,
its ranked list over all its rounds), answer EM/F1 against metadata.answer, mean retrieval rounds, latency.
SQuAD: answer EM/F1 (against any of the reference answers) over the SQuAD paragraphs, plus gold@10.
Writes results.csv, results.json (one entry per system) and report.md.
"""

from __future__ import annotations

import csv
import json
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from rag.agent.settings import DEFAULT_AGENT, AgentSettings
from rag.answer.llm import check_llm, get_backend
from rag.config import RagError, percentile
from rag.lexicon import normalize_answer, strip_citations
from rag.retrieve import RetrievalSettings, Retriever

DATASETS = ("hotpotqa", "squad")
TOP = 10  # all_gold@10: the first 10 passages count
SQUAD_DEFAULT_LIMIT = 300  # SQuAD dev has 10,570 questions; a sample keeps the run short
FIELDS = [
    "name",
    "system",
    "backend",
    "n_queries",
    "all_gold@10",
    "em",
    "f1",
    "steps_mean",
    "latency_ms_p50",
    "latency_ms_p95",
]


def exact_match(prediction: str, answers: list[str]) -> float:
    pred = normalize_answer(strip_citations(prediction))
    return float(any(pred == normalize_answer(a) for a in answers))


def f1_score(prediction: str, answers: list[str]) -> float:
    """SQuAD token F1, the best over the reference answers."""
    pred = normalize_answer(strip_citations(prediction)).split()
    best = 0.0
    for answer in answers:
        gold = normalize_answer(answer).split()
        common = sum((Counter(pred) & Counter(gold)).values())
        if common:
            p, r = common / len(pred), common / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


def load_eval_set(dataset: str, queries_file=None, qrels_file=None, limit: int | None = None):
    """(corpus, queries, qrels) with answers in each query's metadata as a list under 'answers'."""
    from rag.data.corpus import load_corpus
    from rag.data.files import load_qrels_file
    from rag.data.judgments import load_queries_file

    if dataset not in DATASETS:
        raise RagError(f"unknown dataset '{dataset}'; valid datasets: {', '.join(DATASETS)}")
    if (queries_file is None) != (qrels_file is None) and dataset == "hotpotqa":
        raise RagError("give --queries and --qrels together (or neither, to use the dataset's own)")
    if limit is not None and limit < 1:
        raise RagError(f"--limit must be at least 1 (got {limit})")
    corpus = load_corpus(dataset)
    queries = load_queries_file(queries_file) if queries_file else list(corpus.queries)
    qrels = load_qrels_file(qrels_file) if qrels_file else corpus.qrels
    queries = [q for q in queries if q.id in qrels]
    if dataset == "squad" and limit is None:
        limit = SQUAD_DEFAULT_LIMIT
    if dataset == "squad":  # a spread over articles, not the first article's questions only
        rng = np.random.default_rng(0)
        queries = [queries[i] for i in sorted(rng.permutation(len(queries))[: limit or len(queries)])]
    queries = queries[:limit] if limit else queries
    for q in queries:
        answers = q.metadata.get("answers") or ([q.metadata["answer"]] if "answer" in q.metadata else [])
        q.metadata["answers"] = [str(a) for a in answers]
    if not queries:
        raise RagError("no queries with qrels to evaluate; check --queries and --qrels")
    return corpus, queries, {q.id: qrels[q.id] for q in queries}


def _summarise(name: str, system: str, backend: str, rows: list[dict], qrels: dict) -> dict:
    from rag.studies.metrics import all_gold_at_k

    run = {r["qid"]: {pid: float(TOP - i) for i, pid in enumerate(r["ranked"][:TOP])} for r in rows}
    lat = np.array([r["latency_ms"] for r in rows])
    with_answers = [r for r in rows if r["answers"]]
    return {
        "name": name,
        "system": system,
        "backend": backend,
        "n_queries": len(rows),
        "all_gold@10": round(all_gold_at_k(qrels, run, TOP), 4),
        "em": round(float(np.mean([r["em"] for r in with_answers])), 4) if with_answers else None,
        "f1": round(float(np.mean([r["f1"] for r in with_answers])), 4) if with_answers else None,
        "steps_mean": round(float(np.mean([r["steps"] for r in rows])), 3),
        "latency_ms_p50": round(percentile(lat, 50), 1),
        "latency_ms_p95": round(percentile(lat, 95), 1),
    }


def single_shot(retriever, backend, queries, k_context: int = 5, progress=None, name="single-shot") -> list[dict]:
    """Top-10 retrieval for the question as asked, then an answer from the top passages by the same backend."""
    rows = []
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        hits = retriever.search(q.text, TOP)
        passages = [
            {"n": j + 1, "id": h.passage.id, "title": h.passage.title, "text": h.passage.text, "score": float(h.score)}
            for j, h in enumerate(hits[:k_context])
        ]
        try:
            answer = backend.answer(q.text, passages, short=True)
        except Exception as exc:  # the same fallback the agent has
            from rag.answer.llm import ExtractiveBackend

            answer = ExtractiveBackend().answer(q.text, passages, short=True) + f" ({type(exc).__name__})"
        rows.append(_row(q, [h.passage.id for h in hits], answer, 1, (time.perf_counter() - t0) * 1e3))
        if progress:
            progress(name, i + 1, len(queries))
    return rows


def agent_runs(retriever, backend, queries, agent: AgentSettings, progress=None, name="agent") -> list[dict]:
    from rag.agent import run_agent

    rows, agent = [], replace(agent, short_answer=True)
    for i, q in enumerate(queries):
        result = run_agent(q.text, retriever.settings, agent, backend=backend, retriever=retriever)
        row = _row(
            q, [r["id"] for r in result["retrieved"]], result["answer"], result["rounds"], result["timings"]["total_ms"]
        )
        row.update(mode=result["mode"], warnings=len(result["warnings"]))
        rows.append(row)
        if progress:
            progress(name, i + 1, len(queries))
    return rows


def _row(q, ranked: list[str], answer: str, steps: int, latency_ms: float) -> dict:
    answers = q.metadata.get("answers", [])
    return {
        "qid": q.id,
        "ranked": ranked,
        "answer": answer,
        "steps": steps,
        "latency_ms": latency_ms,
        "answers": answers,
        "em": exact_match(answer, answers) if answers else None,
        "f1": f1_score(answer, answers) if answers else None,
        "type": q.metadata.get("type"),
    }


def evaluate_agent(
    dataset: str = "hotpotqa",
    *,
    queries_file=None,
    qrels_file=None,
    limit: int | None = None,
    llms=(DEFAULT_AGENT.llm,),
    settings: RetrievalSettings | None = None,
    agent: AgentSettings = DEFAULT_AGENT,
    k: int = 10,
    out: Path | str = "results/agent",
    progress: Callable[[str, int, int], None] | None = None,
    single_shot_llms=None,
    threads: int | None = None,
) -> dict:
    """Run single-shot and agent systems for each backend; write results.csv, results.json, report.md to out.

    settings: the retrieval settings (their corpus is replaced by the dataset; k = hits per search, default 10).
    threads sets torch's CPU threads (1 is much faster for one-query-at-a-time work on a busy machine)."""

    if threads:
        import torch

        torch.set_num_threads(threads)
    agent = agent.validated()
    for name in llms:
        check_llm(name)
    corpus, queries, qrels = load_eval_set(dataset, queries_file, qrels_file, limit)
    settings = replace(settings or RetrievalSettings(), corpus=dataset, k=k).validated()
    r = Retriever.open(settings, corpus=corpus)
    systems, per_query, warnings = [], {}, []
    for llm in llms:
        try:
            backend = get_backend(llm)
        except Exception as exc:
            warnings.append(f"backend {llm} unavailable ({type(exc).__name__}: {exc}); skipped")
            continue
        for system, runner in (
            ("single-shot", lambda n, backend=backend: single_shot(r, backend, queries, progress=progress, name=n)),
            ("agent", lambda n, backend=backend: agent_runs(r, backend, queries, agent, progress, n)),
        ):
            if system == "single-shot" and single_shot_llms is not None and llm not in single_shot_llms:
                continue
            name = f"{system} ({llm})"
            rows = runner(name)
            systems.append(_summarise(name, system, llm, rows, qrels))
            per_query[name] = rows
    described = {
        "dataset": dataset,
        **settings.as_dict(),
        "max_steps": agent.max_steps,
        "threads": threads,
        **r.description,
    }
    result = {
        "dataset": dataset,
        "n_queries": len(queries),
        "settings": described,
        "systems": systems,
        "summary": _summary_lines(systems),
        "warnings": warnings,
    }
    write_outputs(Path(out), result, per_query)
    return result


def _summary_lines(systems: list[dict]) -> list[str]:
    lines = []
    by_name = {s["name"]: s for s in systems}
    for s in systems:
        if s["system"] == "agent":
            ref = by_name.get(f"single-shot ({s['backend']})") or next(
                (x for x in systems if x["system"] == "single-shot"), None
            )
            if ref:
                delta = 100 * (s["all_gold@10"] - ref["all_gold@10"])
                lines.append(
                    f"{s['name']}: all_gold@10 {s['all_gold@10']:.3f} vs {ref['all_gold@10']:.3f} single-shot "
                    f"({delta:+.1f} points); F1 {s['f1'] if s['f1'] is not None else '-'} vs "
                    f"{ref['f1'] if ref['f1'] is not None else '-'}; latency p50 "
                    f"{s['latency_ms_p50'] / max(ref['latency_ms_p50'], 1e-9):.1f}× single-shot"
                )
    return lines


def write_outputs(out: Path, result: dict, per_query: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(result["systems"])
    (out / "results.json").write_text(json.dumps(result, indent=2))
    with open(out / "per_query.jsonl", "w") as f:
        for name, rows in per_query.items():
            for row in rows:
                f.write(
                    json.dumps(
                        {
                            "system": name,
                            **{k: v for k, v in row.items() if k != "ranked"},
                            "top10": row["ranked"][:TOP],
                        }
                    )
                    + "\n"
                )
    s = result["settings"]
    lines = [
        f"# Agent evaluation: {result['dataset']}",
        "",
        f"{result['n_queries']} queries · retriever {s['retriever']} · encoder {s.get('encoder')} "
        f"d={s.get('dim')} · index {s.get('index')} · max_steps {s['max_steps']} · device {s.get('device')}",
        "",
        "| system | all_gold@10 | EM | F1 | steps (mean) | latency p50 ms | latency p95 ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in result["systems"]:
        cells = [row["name"]] + [
            "-"
            if row.get(c) is None
            else f"{row[c]:.3f}"
            if c != "steps_mean" and "latency" not in c
            else f"{row[c]:g}"
            for c in FIELDS[4:]
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", *[f"- {line}" for line in result["summary"]], *[f"- warning: {w}" for w in result["warnings"]], ""]
    (out / "report.md").write_text("\n".join(lines))
