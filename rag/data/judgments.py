"""Judged query sets: queries files (BEIR queries.jsonl), qrels files (BEIR TSV), qrels keyed by document paths,
and smaller real subsets of a judged corpus."""

from __future__ import annotations

import random
from pathlib import Path

from rag.config import RagError
from rag.data.corpus import Corpus, Passage, Query
from rag.data.files import read_jsonl


def load_queries_file(path: str | Path) -> list[Query]:
    path = Path(path)
    if not path.exists():
        raise RagError(f"queries file not found: {path}")
    rows, _ = read_jsonl(path, ("_id", "text"), ())
    return [Query(id=str(r["_id"]), text=r["text"], metadata=r.get("metadata") or {}) for r in rows]


def expand_document_qrels(qrels: dict[str, dict[str, int]], passages: list[Passage]) -> dict[str, dict[str, int]]:
    """Qrels keyed by passage id or by a folder document's path (`guides/install.md`): a path stands for every
    passage of that document, with the same grade. Ids that are neither stay as they are (and are reported)."""
    ids = {p.id for p in passages}
    by_source: dict[str, list[str]] = {}
    for p in passages:
        by_source.setdefault(p.source, []).append(p.id)
    out: dict[str, dict[str, int]] = {}
    for qid, rel in qrels.items():
        for doc, grade in rel.items():
            for pid in [doc] if doc in ids or doc not in by_source else by_source[doc]:
                out.setdefault(qid, {})[pid] = max(grade, out.get(qid, {}).get(pid, grade))
    return out


def subset(corpus: Corpus, n_queries: int, n_extra_docs: int, seed: int = 0) -> Corpus:
    """A smaller real corpus: n judged queries, their relevant documents, plus n_extra_docs random others."""
    rng = random.Random(seed)
    judged = [q for q in corpus.queries if corpus.qrels.get(q.id)]
    queries = sorted(rng.sample(judged, min(n_queries, len(judged))), key=lambda q: q.id)
    qrels = {q.id: corpus.qrels[q.id] for q in queries}
    wanted = {doc for rel in qrels.values() for doc in rel}
    others = [p.id for p in corpus.passages if p.id not in wanted]
    wanted |= set(rng.sample(others, min(n_extra_docs, len(others))))
    passages = [p for p in corpus.passages if p.id in wanted]
    return Corpus(
        name=f"{corpus.name}-sub{len(queries)}q{len(passages)}d",
        passages=passages,
        queries=queries,
        qrels=qrels,
        source=corpus.source,
        invalid_utf8=corpus.invalid_utf8,
    )
