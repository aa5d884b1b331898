"""`rag eval answers --docs DIR --questions FILE`: the agent on a documentation folder, run as a user runs it.

The folder is indexed with the given settings (built first when its index is missing, and every passage screened, as
`rag index build` does), then each question is asked with the agent's defaults. Per question and per folder it reports:
- key_fact: the answer contains the key facts (all of them, or one when the question's `any_of` is true), with the
  containment test of the built-in set (case, spaces, thousands separators and code marks ignored);
- cited_right / found_top5: a citation, or one of the first five retrieved passages, comes from the question's file;
- abstained: the answer says the documents do not answer it (`"abstained": true` in `rag ask --json`), reported
  separately on absent questions (right) and on answerable ones (wrong);
- screen_warned: the injection screen removed text from a passage the answer read;
- screen: the share of the folder's sentences the screen flags (the answer step would remove them);
- debris: the answer carries markup a reader should have rendered or a parser message (rag.data.fidelity's
  patterns, outside fenced code);
- latency: in-process per question, and from the CLI: `rag search` and `rag ask` run as subprocesses on a sample of
  the questions, alternately, so that the ask/search ratio is measured side by side on the same machine state.

The question file is JSONL, one object a line: question, key_facts (list of strings; empty for absent), any_of,
source (the file that holds the answer, relative to the folder; null for absent), type (lookup, howto, why,
compare, number, yesno, absent).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from rag.agent.settings import DEFAULT_AGENT, AgentSettings
from rag.config import RagError, percentile
from rag.data.fidelity import CODE_FENCED, DEBRIS, PARSER_MESSAGE
from rag.retrieve import RetrievalSettings
from rag.studies.answer_eval import contains_fact, question_lines

DOC_KEYS = ("question", "key_facts", "type")
CLI_SAMPLE = 6  # questions timed through the CLI (each costs two cold processes)
RAG_COMMAND = (sys.executable, "-c", "import sys; from cli import app; sys.argv[0] = 'rag'; app()")  # as `rag`
SCREEN_MARK = "addressed to the model"  # the screen's warning (rag.screen.guard.screen_passages)


def load_doc_questions(path: Path) -> list[dict]:
    """The question set at path; a RagError naming the line for a file that is missing, not JSON or malformed."""
    path = Path(path)
    items = []
    for n, q in question_lines(path, f"--questions with a JSONL file of {', '.join(DOC_KEYS)}"):
        if not isinstance(q, dict) or any(k not in q for k in DOC_KEYS) or not str(q["question"]).strip():
            raise RagError(f"{path}:{n} lacks one of {', '.join(DOC_KEYS)}; each line needs them")
        facts = q["key_facts"]
        if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
            raise RagError(f"{path}:{n}: key_facts must be a list of strings")
        absent = q["type"] == "absent"
        if not absent and not facts:
            raise RagError(f"{path}:{n}: an answerable question needs key_facts (type 'absent' for none)")
        items.append(
            {
                "id": str(q.get("id") or f"q{n}"),
                "question": str(q["question"]),
                "key_facts": facts,
                "any_of": bool(q.get("any_of")),
                "source": None if absent else (q.get("source") or None),
                "type": str(q["type"]),
            }
        )
    if not items:
        raise RagError(f"{path} holds no questions")
    return items


def has_debris(answer: str) -> bool:
    """Markup a reader should have rendered, or a parser message, outside fenced code."""
    prose = CODE_FENCED.sub("", answer)
    return bool(DEBRIS.search(prose) or PARSER_MESSAGE.search(prose))


def source_of(passage_id: str) -> str:
    """A folder passage's file: its id up to the '#' of the chunk number."""
    return passage_id.rsplit("#", 1)[0]


def score_answer(item: dict, result: dict, ms: float) -> dict:
    """One question's row from the agent's result dict (the one `rag ask --json` prints)."""
    answer = result["answer"]
    cited = [source_of(c["id"]) for c in result["citations"]]
    top5 = [source_of(r["id"]) for r in result["retrieved"][:5]]
    absent = item["type"] == "absent"
    row = {
        "id": item["id"],
        "type": item["type"],
        "question": item["question"],
        "answer": answer,
        "cited": cited,
        "abstained": float(bool(result.get("abstained"))),
        "answerable": next((s["answerable"] for s in result.get("steps", []) if "answerable" in s), None),
        "screen_warned": float(any(SCREEN_MARK in w for w in result["warnings"])),
        "debris": float(has_debris(answer)),
        "latency_ms": ms,
    }
    if not absent:
        hits = [contains_fact(answer, f) for f in item["key_facts"]]
        row["key_fact"] = float(any(hits) if item["any_of"] else all(hits))
        if item["source"]:
            row["cited_right"] = float(item["source"] in cited)
            row["found_top5"] = float(item["source"] in top5)
    return row


def summarise_rows(rows: list[dict]) -> dict:
    """Folder figures: key fact, citations and abstention over answerable / absent questions, warnings, latency."""
    answerable = [r for r in rows if r["type"] != "absent"]
    absent = [r for r in rows if r["type"] == "absent"]

    def mean(rs, key):
        vals = [r[key] for r in rs if key in r]
        return round(sum(vals) / len(vals), 4) if vals else None

    lat = [r["latency_ms"] for r in rows]
    return {
        "n": len(rows),
        "answerable": len(answerable),
        "absent": len(absent),
        "key_fact": mean(answerable, "key_fact"),
        "cited_right": mean(answerable, "cited_right"),
        "found_top5": mean(answerable, "found_top5"),
        "abstained_absent": mean(absent, "abstained"),
        "abstained_answerable": mean(answerable, "abstained"),
        "screen_warned": mean(rows, "screen_warned"),
        "debris": mean(rows, "debris"),
        "latency_ms_p50": round(percentile(lat, 50), 1),
        "latency_ms_p95": round(percentile(lat, 95), 1),
    }


def screen_rate(texts: list[str], det=None, examples: bool = False) -> dict:
    """How much of the folder the injection screen flags, read as the answer step reads each passage text (its
    sentences, the verifier's second look included): sentences and passages flagged, and the reasons, most common
    first; with examples, each flagged sentence with its reason. det: the screen's detector (default: shipped)."""
    from collections import Counter

    from rag.screen.detector import detector, pieces

    det, sentences, flagged, hit, reasons, found = det or detector(), 0, 0, 0, Counter(), []
    for text in texts:
        flags = det.passage_flags(pieces(text))
        sentences += len(flags)
        marked = [f for f in flags if f]
        flagged += len(marked)
        hit += bool(marked)
        reasons.update(re.sub(r":[\d.]+$", "", f.reason.split(" ")[0]) for f in marked)  # similar:0.91 -> similar
        found += [f"{f.reason} | {f.sentence[:200]}" for f in marked] if examples else []
    out = {
        "sentences": sentences,
        "sentences_flagged": flagged,
        "sentence_share": round(flagged / max(1, sentences), 4),
        "passages": len(texts),
        "passages_flagged": hit,
        "reasons": dict(reasons.most_common(8)),
    }
    return {**out, "flagged": found} if examples else out


def cli_latency(folder: str, questions: list[str], settings: RetrievalSettings) -> dict:
    """`rag search` and `rag ask` wall times from fresh processes, alternately on the same questions; p50s and the
    ratio ask/search. The options passed are the settings' own, so both commands open the same index."""
    opts = ["--corpus", folder, "--encoder", settings.encoder, "--index", settings.index, "--retriever"]
    opts += [settings.retriever]
    if settings.dim:
        opts += ["--dim", str(settings.dim)]
    times: dict[str, list[float]] = {"search": [], "ask": []}
    for q in questions:
        for cmd in ("search", "ask"):
            t0 = time.perf_counter()
            done = subprocess.run(
                [*RAG_COMMAND, cmd, q, *opts, "--json"],
                capture_output=True,
                text=True,
                timeout=900,
            )
            if done.returncode != 0:
                raise RagError(f"rag {cmd} failed on the CLI latency sample: {done.stderr.strip()[-300:]}")
            times[cmd].append(time.perf_counter() - t0)
    search, ask = percentile(times["search"], 50), percentile(times["ask"], 50)
    return {
        "questions": len(questions),
        "search_s_p50": round(search, 2),
        "ask_s_p50": round(ask, 2),
        "ask_over_search": round(ask / search, 2) if search else None,
        "search_s": [round(t, 2) for t in times["search"]],
        "ask_s": [round(t, 2) for t in times["ask"]],
    }


def evaluate_docs(
    pairs: list[tuple[Path, Path]],
    *,
    settings: RetrievalSettings | None = None,
    agent: AgentSettings = DEFAULT_AGENT,
    cli_sample: int = CLI_SAMPLE,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[dict, list[dict]]:
    """Each (folder, question file): build or open its index, ask every question, time a CLI sample.
    Returns ({settings, folders: {name: {summary, by_type, build_s, cli}}}, per-question rows)."""
    from rag.agent import run_agent
    from rag.retrieve import open_retriever
    from rag.screen.guard import screen_corpus

    checked = []
    for folder, qfile in pairs:  # every bad path or file stops here, before any model loads
        folder = Path(folder)
        if not folder.is_dir():
            raise RagError(f"no such folder: {folder}")
        checked.append((folder, load_doc_questions(qfile)))
    base = settings or RetrievalSettings()
    agent = agent.validated()
    folders, per_query = {}, []
    for folder, items in checked:
        name = folder.name
        s = replace(base, corpus=str(folder)).validated()
        t0 = time.perf_counter()
        retriever = open_retriever(s)
        screened = screen_corpus(retriever.corpus)  # as `rag index build` does: the asks read stored verdicts
        build_s = time.perf_counter() - t0
        rows = []
        for i, item in enumerate(items):
            t1 = time.perf_counter()
            result = run_agent(item["question"], s, agent, retriever=retriever)
            rows.append({"folder": name, **score_answer(item, result, (time.perf_counter() - t1) * 1e3)})
            if progress:
                progress(name, i + 1, len(items))
        step = max(1, len(items) // cli_sample) if cli_sample else 0
        sample = [it["question"] for it in items[::step]][:cli_sample] if cli_sample else []
        types = sorted({r["type"] for r in rows})
        folders[name] = {
            "folder": str(folder),
            "questions": len(items),
            "open_or_build_s": round(build_s, 1),
            "screened": screened,
            "summary": summarise_rows(rows),
            "by_type": {t: summarise_rows([r for r in rows if r["type"] == t]) for t in types},
            "cli": cli_latency(str(folder), sample, s) if sample else None,
            "screen": screen_rate([p.text for p in retriever.corpus.passages]),
        }
        per_query.extend(rows)
    settings = {
        **base.as_dict(),
        "max_steps": agent.max_steps,
        "use_abstain": agent.use_abstain,
        "without": list(agent.without),
    }
    return {"settings": settings, "folders": folders}, per_query


COLUMNS = (
    "key_fact",
    "cited_right",
    "found_top5",
    "abstained_absent",
    "abstained_answerable",
    "screen_warned",
    "debris",
    "latency_ms_p50",
)


def report_lines(result: dict) -> list[str]:
    lines = ["# Answers on documentation folders (`rag eval answers --docs`)", ""]
    s = result["settings"]
    lines.append(f"- encoder {s['encoder']}, index {s['index']}, retriever {s['retriever']}, k {s['k']}")
    lines += ["", "| folder | n (absent) | " + " | ".join(COLUMNS) + " | CLI ask/search p50 | sentences flagged |"]
    lines.append("|---" * (len(COLUMNS) + 4) + "|")
    for name, f in result["folders"].items():
        m, cli = f["summary"], f["cli"]
        ratio = f"{cli['ask_s_p50']} s / {cli['search_s_p50']} s = {cli['ask_over_search']}×" if cli else "-"
        cells = " | ".join("-" if m[c] is None else f"{m[c]:g}" for c in COLUMNS)
        sc = f["screen"]
        screened = f"{sc['sentences_flagged']} / {sc['sentences']} = {100 * sc['sentence_share']:.2f} %"
        lines.append(f"| {name} | {m['n']} ({m['absent']}) | {cells} | {ratio} | {screened} |")
    for name, f in result["folders"].items():
        lines += ["", f"## {name}, by question type", "", "| type | n | key_fact | cited_right | abstained |"]
        lines.append("|---|---|---|---|---|")
        for t, m in f["by_type"].items():
            ab = m["abstained_absent"] if t == "absent" else m["abstained_answerable"]
            lines.append(
                f"| {t} | {m['n']} | {m['key_fact'] if m['key_fact'] is not None else '-'} | "
                f"{m['cited_right'] if m['cited_right'] is not None else '-'} | {ab} |"
            )
    return lines + [""]


def write_outputs(out: Path, result: dict, per_query: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    with open(out / "per_query.jsonl", "w") as f:
        for row in per_query:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "report.md").write_text("\n".join(report_lines(result)))
