#!/usr/bin/env python
"""What the chunking of passages does to retrieval: passages past the encoder's window, and the top five hits.

    .venv/bin/python scripts/chunking_eval.py docs --chunking words|tokens --out FILE.json \
        DIR QUESTIONS.jsonl [DIR QUESTIONS.jsonl ...]
    .venv/bin/python scripts/chunking_eval.py beir --dataset scifact --out FILE.json \
        [--retrievers bm25] [--subset QUERIES EXTRA_DOCS]

`docs`: each documentation folder is read as `rag index build --corpus DIR` reads it (rag.data.corpus.load_folder)
with the chunking named (rag.data.corpus.CHUNKINGS; run each in its own RAG_INDEX_DIR, as the two give one folder
two different contents) and searched with MiniLM, flat, d = 384, by dense, BM25 and hybrid. For each
answerable question (rag.studies.docs_eval's question files) it counts whether a passage of the question's file is
in the first five hits (`file_top5`) and whether the key facts are in the text of the first five (`fact_top5`: all
of them, or one where `any_of`; rag.studies.answer_eval.contains_fact over title and text). It also counts the
passages whose title line + text (what the encoder reads, rag.encoders.base.document_text) is longer than MiniLM's
256-token window, [CLS] and [SEP] included.

`beir`: a BEIR set's documents are read whole (rag.data.corpus.load_beir does not chunk), so the encoder reads only
the first 256 tokens of a long one. This mode counts those documents, then scores the set twice with MiniLM flat
d = 384, BM25 and hybrid: whole documents, and every document cut into token windows by rag.data.token_chunks
(title prefixed to each window), a document scored by its best window (the first of its windows in the ranking).
nDCG@10 with pytrec_eval (rag.studies.metrics) on the set's test qrels. `--subset Q N` scores Q judged queries
over their relevant documents plus N others drawn at random (rag.data.judgments.subset, seed 0), for a dense
encode that fits the time at hand.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag.config import runtime_environment  # noqa: E402

runtime_environment()

RETRIEVERS = ("dense", "bm25", "hybrid")
WINDOW = 256  # MiniLM's max_seq_length, [CLS] and [SEP] included


def over_window(passages) -> dict:
    from rag.encoders.base import document_text
    from rag.models import minilm_tokenizer

    counts = [len(e.ids) for e in minilm_tokenizer().encode_batch([document_text(p) for p in passages])]
    return {
        "passages": len(counts),
        "over_window": sum(n > WINDOW for n in counts),
        "max_tokens": max(counts),
        "median_tokens": sorted(counts)[len(counts) // 2],
    }


def settings_for(corpus: str, retriever: str):
    from rag.retrieve import RetrievalSettings

    return replace(RetrievalSettings(), corpus=corpus, retriever=retriever, encoder="minilm", dim=384, index="flat")


def docs_folder(folder: Path, qfile: Path, chunking: str) -> dict:
    from rag.data.corpus import load_folder
    from rag.retrieve.retriever import Retriever
    from rag.studies.answer_eval import contains_fact
    from rag.studies.docs_eval import load_doc_questions, source_of

    items = [q for q in load_doc_questions(qfile) if q["type"] != "absent"]
    corpus = load_folder(folder, name=str(folder), chunking=chunking)
    out = {"folder": str(folder), "questions": str(qfile), "answerable": len(items), **over_window(corpus.passages)}
    for kind in RETRIEVERS:
        t0 = time.perf_counter()
        retriever = Retriever.open(settings_for(str(folder), kind), corpus=corpus)
        hits = retriever.search_many([q["question"] for q in items], k=5)
        file_hits, fact_hits = {}, {}
        for q, hs in zip(items, hits):
            text = "\n".join(f"{h.passage.title}\n{h.passage.text}" for h in hs)
            facts = [contains_fact(text, f) for f in q["key_facts"]]
            fact_hits[q["id"]] = any(facts) if q["any_of"] else all(facts)
            if q["source"]:
                file_hits[q["id"]] = q["source"] in {source_of(h.passage.id) for h in hs}
        out[kind] = {
            "file_top5": sum(file_hits.values()),
            "file_questions": len(file_hits),
            "fact_top5": sum(fact_hits.values()),
            "fact_questions": len(fact_hits),
            "file_missed": [q for q, hit in file_hits.items() if not hit],
            "fact_missed": [q for q, hit in fact_hits.items() if not hit],
            "seconds": round(time.perf_counter() - t0, 1),
        }
        print(folder.name, kind, out[kind], file=sys.stderr, flush=True)
    return out


def windowed(corpus):
    """The corpus with each document cut into token windows, ids `<doc id>#<n>`."""
    from rag.data.corpus import Corpus, Passage
    from rag.data.ingest import Block
    from rag.data.token_chunks import chunk_by_tokens, encoder_tokenizer

    tok, window = encoder_tokenizer()
    passages = []
    for p in corpus.passages:
        for i, (_, _, text) in enumerate(chunk_by_tokens([Block(p.text)], p.title, tok, window)):
            passages.append(Passage(id=f"{p.id}#{i}", title=p.title, text=text, source=p.source))
    return Corpus(name=f"{corpus.source}-windows", passages=passages, queries=corpus.queries, qrels=corpus.qrels)


def beir_scores(corpus, name: str, kind: str, depth: int, windows: bool) -> dict:
    from rag.retrieve.retriever import Retriever
    from rag.studies.metrics import ir_metrics

    retriever = Retriever.open(settings_for(name, kind), corpus=corpus)
    hits = retriever.search_many([q.text for q in corpus.queries], k=depth)
    run = {}
    for q, hs in zip(corpus.queries, hits):
        ranked = {}
        for rank, h in enumerate(hs):  # a document's score: its best window's rank
            ranked.setdefault(h.passage.id.rsplit("#", 1)[0] if windows else h.passage.id, float(depth - rank))
        run[q.id] = ranked
    return {m: round(v, 4) for m, v in ir_metrics(corpus.qrels, run)["mean"].items()}


def beir(dataset: str, depth: int, retrievers: list[str], sub: list[int] | None) -> dict:
    from rag.data.corpus import load_corpus
    from rag.data.judgments import subset

    whole = load_corpus(dataset)
    if sub:
        whole = subset(whole, sub[0], sub[1], seed=0)
        whole.source = f"{whole.source}-{whole.name}"
    cut = windowed(whole)
    out = {
        "dataset": dataset,
        "subset": {"queries": sub[0], "extra_docs": sub[1], "seed": 0} if sub else None,
        "queries": len(whole.queries),
        "whole": over_window(whole.passages),
        "windows": over_window(cut.passages),
        "depth": depth,
    }
    for kind in retrievers:
        out[kind] = {
            "whole": beir_scores(whole, whole.name, kind, depth, False),
            "windows": beir_scores(cut, cut.name, kind, depth, True),
        }
        print(dataset, kind, out[kind], file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    d = sub.add_parser("docs")
    d.add_argument("pairs", nargs="+", help="DIR QUESTIONS.jsonl, repeated")
    d.add_argument("--chunking", choices=("words", "tokens"), required=True)
    d.add_argument("--out", type=Path, required=True)
    b = sub.add_parser("beir")
    b.add_argument("--dataset", default="scifact")
    b.add_argument("--depth", type=int, default=200, help="passages retrieved before documents are scored")
    b.add_argument("--retrievers", default=",".join(RETRIEVERS))
    b.add_argument("--subset", type=int, nargs=2, metavar=("QUERIES", "EXTRA_DOCS"))
    b.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    result = {"command": " ".join(["scripts/chunking_eval.py", *sys.argv[1:]]), "commit": commit.strip() or None}
    if args.mode == "docs":
        if len(args.pairs) % 2:
            ap.error("give DIR QUESTIONS pairs")
        pairs = list(zip(args.pairs[::2], args.pairs[1::2]))
        result["chunking"] = args.chunking
        result["folders"] = [docs_folder(Path(f), Path(q), args.chunking) for f, q in pairs]
    else:
        result.update(beir(args.dataset, args.depth, args.retrievers.split(","), args.subset))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
