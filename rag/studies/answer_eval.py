"""`rag eval answers`: what the answers say, per backend and per question type.

Four parts, each with the learned reader on and, for the side-by-side, off (`--compare-no-reader`):
- squad-reading: SQuAD v1.1, the gold paragraph only: EM and token F1 of the reader's best span.
- squad-open: the same questions over all SQuAD paragraphs (retrieve, then read): single-shot and agent; EM, F1,
  gold@10, how often the agent decomposed a single-hop question, how often the gold passage was retrieved but
  dropped by the grader.
- hotpotqa: the held-out HotpotQA questions (all but the first HOTPOT_DEV, which are for development): single-shot
  and agent; all_gold@10, EM, F1.
- builtin: the question set for the built-in corpus (evalsets/seed_questions.jsonl, or --seed): the key fact in
  the answer (normalised containment) and the right passage among the citations, per question type.
Every part reports answer length (words), steps and latency p50/p95. SQuAD questions come from the last
EVAL_ARTICLES articles only (the first TRAIN_ARTICLES are the reader's training data).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from rag.agent.multihop import effective_threshold
from rag.agent.settings import DEFAULT_AGENT, AgentSettings
from rag.config import EVALSETS_DIR, REPO_DIR, RagError, percentile
from rag.data.splits import EVAL_ARTICLES, HOTPOT_DEV, TRAIN_ARTICLES
from rag.lexicon import strip_citations
from rag.retrieve import RetrievalSettings, Retriever
from rag.studies.agent_eval import TOP, exact_match, f1_score

PARTS = ("squad-reading", "squad-open", "hotpotqa", "builtin")
SQUAD_LIMIT = 300
SEED_FILE = EVALSETS_DIR / "seed_questions.jsonl"


def squad_eval_questions(limit: int = SQUAD_LIMIT, seed: int = 0) -> list[dict]:
    """[{id, question, answers, gold, article}] from the last EVAL_ARTICLES SQuAD articles, a seeded spread."""
    from rag.data.splits import squad_articles

    out = []
    for article in squad_articles("eval"):
        for i, para in enumerate(article["paragraphs"]):
            for qa in para["qas"]:
                out.append(
                    {
                        "id": qa["id"],
                        "question": qa["question"],
                        "answers": [a["text"] for a in qa["answers"]],
                        "gold": f"{article['title']}#{i}",
                        "context": para["context"],
                    }
                )
    rng = np.random.default_rng(seed)
    return [out[i] for i in sorted(rng.permutation(len(out))[: min(limit, len(out))])]


def question_type(question: str) -> str:
    """A coarse type for SQuAD/HotpotQA questions: the wh-word (how many/how much/when/who/where/which/what/why/how),
    yes/no, or other."""
    q = question.lower()
    for kind, pattern in (
        ("how many/much", r"\bhow (many|much)\b"),
        ("when", r"\bwhen\b|\bwhat year\b"),
        ("who", r"\bwho(m|se)?\b"),
        ("where", r"\bwhere\b"),
        ("why", r"\bwhy\b"),
        ("how", r"\bhow\b"),
        ("which", r"\bwhich\b"),
        ("what", r"\bwhat\b"),
    ):
        if re.search(pattern, q):
            return kind
    if re.match(r"(is|are|was|were|do|does|did|can|could|has|have|had)\b", q):
        return "yes/no"
    return "other"


def summarise(rows: list[dict], keys: tuple[str, ...]) -> dict:
    """Means of the given per-row measures, plus n, answer length, steps and latency p50/p95."""
    out = {"n": len(rows)}
    for key in keys:
        vals = [r[key] for r in rows if r.get(key) is not None]
        out[key] = round(float(np.mean(vals)), 4) if vals else None
    lat = np.array([r["latency_ms"] for r in rows]) if rows else np.zeros(1)
    out["answer_words"] = round(float(np.mean([len(strip_citations(r["answer"]).split()) for r in rows])), 1)
    out["steps"] = round(float(np.mean([r.get("steps", 1) for r in rows])), 3)
    out["latency_ms_p50"] = round(percentile(lat, 50), 1)
    out["latency_ms_p95"] = round(percentile(lat, 95), 1)
    return out


def by_type(rows: list[dict], keys: tuple[str, ...]) -> dict:
    types = sorted({r["type"] for r in rows})
    return {t: summarise([r for r in rows if r["type"] == t], keys) for t in types}


def squad_reading(reader, questions: list[dict], progress=None) -> list[dict]:
    """The reader over the gold paragraph alone: its best span, whatever its margin (SQuAD v1 always answers)."""
    rows = []
    for i, q in enumerate(questions):
        t0 = time.perf_counter()
        spans = reader.read(q["question"], [q["context"]]) if reader is not None else []
        answer = spans[0].text if spans else ""
        rows.append(
            {
                "id": q["id"],
                "type": question_type(q["question"]),
                "answer": answer,
                "em": exact_match(answer, q["answers"]),
                "f1": f1_score(answer, q["answers"]),
                "latency_ms": (time.perf_counter() - t0) * 1e3,
            }
        )
        if progress:
            progress("squad reading", i + 1, len(questions))
    return rows


def single_shot_rows(retriever, backend, items: list[dict], short: bool, progress=None, name="single-shot"):
    """Top-10 retrieval for the question as asked, then the backend answers from the first 5 passages."""
    rows = []
    for i, item in enumerate(items):
        t0 = time.perf_counter()
        hits = retriever.search(item["question"], TOP)
        passages = [
            {"n": j + 1, "id": h.passage.id, "title": h.passage.title, "text": h.passage.text, "score": float(h.score)}
            for j, h in enumerate(hits[:5])
        ]
        answer = backend.answer(item["question"], passages, short=short)
        ids = [h.passage.id for h in hits]
        cited = [passages[int(n) - 1]["id"] for n in re.findall(r"\[(\d+)\]", answer) if 0 < int(n) <= len(passages)]
        rows.append(score_row(item, answer, ids, cited or ids[:1], 1, "direct", [], (time.perf_counter() - t0) * 1e3))
        if progress:
            progress(name, i + 1, len(items))
    return rows


def agent_rows(retriever, backend, items: list[dict], agent: AgentSettings, progress=None, name="agent"):
    """The agent as a user runs it: an extractive backend ranks sentences by the retriever's own encoder too, as
    run_agent does for the backend it builds by name."""
    from rag.agent import run_agent
    from rag.answer.llm import ExtractiveBackend

    if type(backend) is ExtractiveBackend and backend.embed is None and retriever.encoder is not None:
        backend = ExtractiveBackend(
            backend.max_sentences,
            embed=retriever.encoder.encode,
            reader=backend.reader,
            ranked_sentence=backend.ranked_sentence,
        )
    rows = []
    for i, item in enumerate(items):
        t0 = time.perf_counter()
        result = run_agent(item["question"], retriever.settings, agent, backend=backend, retriever=retriever)
        rows.append(score_agent_result(item, result, (time.perf_counter() - t0) * 1e3))
        if progress:
            progress(name, i + 1, len(items))
    return rows


def squad_open_items(limit: int = SQUAD_LIMIT) -> list[dict]:
    """The SQuAD evaluation questions as open-domain items (gold: the paragraph id)."""
    return [{**q, "gold": [q["gold"]], "type": question_type(q["question"])} for q in squad_eval_questions(limit)]


def hotpot_items(limit: int | None = None):
    """(the HotpotQA corpus, its held-out questions after the first HOTPOT_DEV as items; the first `limit`)."""
    from rag.studies.agent_eval import load_eval_set

    corpus, queries, qrels = load_eval_set("hotpotqa")
    queries = queries[HOTPOT_DEV:]
    queries = queries[:limit] if limit else queries
    items = [
        {
            "id": q.id,
            "question": q.text,
            "answers": q.metadata["answers"],
            "gold": sorted(qrels[q.id]),
            "type": q.metadata.get("type") or question_type(q.text),
        }
        for q in queries
    ]
    return corpus, items


def score_agent_result(item: dict, result: dict, ms: float) -> dict:
    """One question's row from the agent's result dict (the one `rag ask --json` prints)."""
    ids = [r["id"] for r in result["retrieved"]]
    dropped = [r["id"] for r in result["retrieved"] if not r["kept"]]
    cited = [c["id"] for c in result["citations"]]
    return score_row(item, result["answer"], ids, cited, result["rounds"], result["mode"], dropped, ms)


def score_row(item: dict, answer: str, ids: list[str], cited: list[str], steps: int, mode: str, dropped, ms) -> dict:
    gold = set(item["gold"])
    row = {
        "id": item["id"],
        "type": item["type"],
        "answer": answer,
        "steps": steps,
        "mode": mode,
        "decomposed": float(mode != "direct" or steps > 1),
        "latency_ms": ms,
        "gold@10": float(gold <= set(ids[:TOP])),
        "gold_dropped": float(bool(gold & set(ids)) and bool(gold & set(dropped))),
        "cited_right": float(bool(gold & set(cited))),
    }
    if item.get("answers"):
        row["em"] = exact_match(answer, item["answers"])
        row["f1"] = f1_score(answer, item["answers"])
    if item.get("key_phrase"):
        row["key_fact"] = float(contains_fact(answer, item["key_phrase"]))
    return row


def contains_fact(answer: str, key: str) -> bool:
    """Whether the answer states the key fact: normalised containment, with thousands separators, spaces around
    symbols and markdown code marks ignored."""

    def norm(text: str) -> str:
        text = strip_citations(text).lower().replace("`", "").replace("\u2212", "-")
        text = re.sub(r"(?<=\d),(?=\d{3})", "", text)
        return re.sub(r"\s+", "", text)

    return norm(key) in norm(answer)


QUESTION_KEYS = ("_id", "question", "passage", "key_phrase")  # "type" is optional ("other")


def question_lines(path: Path, hint: str):
    """(line number, parsed JSON) for each non-blank line of a JSONL question file; a RagError naming the file when
    it is missing (with hint: what to pass instead) and the line when it is not JSON."""
    if not path.is_file():
        raise RagError(f"no question file {path}; pass {hint}")
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            raise RagError(f"{path}:{n} is not JSON ({exc.msg})") from None


def seed_items(path: Path | None = None) -> list[dict]:
    """The built-in question set at path (JSONL: _id, question, passage (an id or a list of ids), key_phrase, type),
    as evaluation items; a RagError naming the line for a file that is missing, not JSON or lacks a key."""
    path = Path(path or SEED_FILE)
    items = []
    for n, q in question_lines(path, f"--seed with a JSONL file of {', '.join(QUESTION_KEYS)}"):
        missing = [k for k in QUESTION_KEYS if not isinstance(q, dict) or not q.get(k)]
        if missing:
            raise RagError(f"{path}:{n} lacks {', '.join(missing)}; each line needs {', '.join(QUESTION_KEYS)}")
        gold = q["passage"] if isinstance(q["passage"], list) else [q["passage"]]
        items.append(
            {
                "id": str(q["_id"]),
                "question": str(q["question"]),
                "gold": [str(g) for g in gold],
                "key_phrase": str(q["key_phrase"]),
                "type": str(q.get("type") or "other"),
            }
        )
    if not items:
        raise RagError(f"{path} holds no questions")
    return items


def evaluate_answers(
    parts=PARTS,
    *,
    llms=(DEFAULT_AGENT.llm,),
    settings: RetrievalSettings | None = None,
    agent: AgentSettings = DEFAULT_AGENT,
    squad_limit: int = SQUAD_LIMIT,
    hotpot_limit: int | None = None,
    seed_file: Path | None = None,
    compare_no_reader: bool = False,
    out: Path | str = "results/answers",
    progress: Callable[[str, int, int], None] | None = None,
) -> dict:
    """Run the parts for each backend (and without the reader when asked); write results.json, per_query.jsonl and
    report.md to out. Returns {settings, parts: {part: [system summary ...]}}."""
    from rag.answer.llm import ExtractiveBackend, check_llm, get_backend
    from rag.answer.reader import default_reader

    for p in parts:
        if p not in PARTS:
            raise RagError(f"unknown part '{p}'; parts: {', '.join(PARTS)}")
    for name in llms:
        check_llm(name)
    builtin_items = seed_items(seed_file) if "builtin" in parts else []  # a bad file stops here, before any model
    agent = agent.validated()
    base = settings or RetrievalSettings()
    reader = default_reader()
    variants = []  # (label, backend, agent settings)
    for name in llms:
        backend = get_backend(name)
        variants.append((name + ("+reader" if getattr(backend, "reader", None) is not None else ""), backend, agent))
    if compare_no_reader:
        variants.append(("extractive (no reader)", ExtractiveBackend(), replace(agent, use_reader=False)))
    results: dict[str, list[dict]] = {}
    per_query: list[dict] = []

    def record(part: str, system: str, rows: list[dict], keys: tuple[str, ...]) -> None:
        summary = {"system": system, **summarise(rows, keys), "by_type": by_type(rows, keys)}
        results.setdefault(part, []).append(summary)
        per_query.extend({"part": part, "system": system, **r} for r in rows)

    if "squad-reading" in parts:
        questions = squad_eval_questions(squad_limit)
        record("squad-reading", "reader", squad_reading(reader, questions, progress), ("em", "f1"))
    if "squad-open" in parts:
        items = squad_open_items(squad_limit)
        r = Retriever.open(replace(base, corpus="squad", k=TOP).validated())
        keys = ("em", "f1", "gold@10", "decomposed", "gold_dropped")
        for label, backend, ag in variants:
            short = replace(ag, short_answer=True)
            record("squad-open", f"single-shot ({label})", single_shot_rows(r, backend, items, True, progress), keys)
            record("squad-open", f"agent ({label})", agent_rows(r, backend, items, short, progress), keys)
    if "hotpotqa" in parts:
        corpus, items = hotpot_items(hotpot_limit)
        r = Retriever.open(replace(base, corpus="hotpotqa", k=TOP).validated(), corpus=corpus)
        keys = ("em", "f1", "gold@10", "decomposed")
        for label, backend, ag in variants:
            short = replace(ag, short_answer=True)
            record("hotpotqa", f"single-shot ({label})", single_shot_rows(r, backend, items, True, progress), keys)
            record("hotpotqa", f"agent ({label})", agent_rows(r, backend, items, short, progress), keys)
    if "builtin" in parts:
        r = Retriever.open(replace(base, corpus="builtin").validated())
        keys = ("key_fact", "cited_right", "decomposed")
        for label, backend, ag in variants:
            record("builtin", f"agent ({label})", agent_rows(r, backend, builtin_items, ag, progress), keys)
    result = {
        "settings": {
            **base.as_dict(),
            "max_steps": agent.max_steps,
            "hop_threshold": effective_threshold(agent.hop_threshold),
            "use_abstain": agent.use_abstain,
            "without": list(agent.without),
            "squad_questions": f"{squad_limit} from the last {EVAL_ARTICLES} articles (the first {TRAIN_ARTICLES} "
            "train the reader)",
            "hotpotqa_questions": f"queries after the first {HOTPOT_DEV} (held out)",
            "seed_file": str(seed_file or SEED_FILE.relative_to(REPO_DIR)),
        },
        "parts": results,
    }
    write_outputs(Path(out), result, per_query)
    return result


COLUMNS = {
    "squad-reading": ("em", "f1", "answer_words", "latency_ms_p50", "latency_ms_p95"),
    "squad-open": (
        "em",
        "f1",
        "gold@10",
        "decomposed",
        "gold_dropped",
        "answer_words",
        "steps",
        "latency_ms_p50",
        "latency_ms_p95",
    ),
    "hotpotqa": ("em", "f1", "gold@10", "decomposed", "answer_words", "steps", "latency_ms_p50", "latency_ms_p95"),
    "builtin": ("key_fact", "cited_right", "decomposed", "answer_words", "steps", "latency_ms_p50", "latency_ms_p95"),
}


def report_lines(result: dict) -> list[str]:
    lines = ["# Answer evaluation (`rag eval answers`)", ""]
    for key, value in result["settings"].items():
        if key in ("retriever", "encoder", "dim", "index", "max_steps", "hop_threshold") or key.endswith("questions"):
            lines.append(f"- {key}: {value}")
    for part, systems in result["parts"].items():
        cols = COLUMNS[part]
        lines += ["", f"## {part}", "", "| system | n | " + " | ".join(cols) + " |", "|---" * (len(cols) + 2) + "|"]
        for s in systems:
            lines.append(f"| {s['system']} | {s['n']} | " + " | ".join(_cell(s.get(c)) for c in cols) + " |")
        lines += ["", "By question type (first system):", ""]
        first = systems[0]
        lines += ["| type | n | " + " | ".join(cols[:3]) + " |", "|---" * 5 + "|"]
        for t, s in first["by_type"].items():
            lines.append(f"| {t} | {s['n']} | " + " | ".join(_cell(s.get(c)) for c in cols[:3]) + " |")
    return lines + [""]


def _cell(v) -> str:
    if v is None:
        return "-"
    return f"{v:.3f}" if isinstance(v, float) and abs(v) < 10 else f"{v:g}"


def write_outputs(out: Path, result: dict, per_query: list[dict]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    with open(out / "per_query.jsonl", "w") as f:
        for row in per_query:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    (out / "report.md").write_text("\n".join(report_lines(result)))
