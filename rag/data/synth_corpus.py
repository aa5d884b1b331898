"""A synthetic text corpus of any size, for scale tests: real Wikipedia sentences, recombined.

The sentences come from the wiki-lm train split (RAG_DATA_DIR/wiki-lm/wiki.train.raw, WikiText raw layout). Each
passage belongs to one article: its title is the article's, its text 2-6 of that article's sentences in a random
order, and with probability 1/4 one sentence of another article (real passages stray too). The output is a BEIR
folder holding only corpus.jsonl (ids `synth-0000000` ...), which `rag index build --corpus DIR` reads; written
as a stream, so a million passages need no more memory than the sentences themselves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from rag.config import RagError, atomic_write, data_dir

HEADING = re.compile(r"^ = ([^=].*?) = $")
SENTENCE_END = re.compile(r"(?<=[.!?]) (?=[A-Z\"'])")
MIN_SENTENCE_CHARS = 30


def wiki_articles(path: Path) -> list[tuple[str, list[str]]]:
    """(title, sentences) of every article of a WikiText raw file with at least two usable sentences."""
    articles: list[tuple[str, list[str]]] = []
    title, sentences = "", []
    for line in path.read_text(encoding="utf-8").splitlines():
        heading = HEADING.match(line)
        if heading:
            if len(sentences) >= 2:
                articles.append((title, sentences))
            title, sentences = heading.group(1).strip(), []
        elif line.strip() and not line.strip().startswith("="):
            sentences += [s.strip() for s in SENTENCE_END.split(line.strip()) if len(s.strip()) >= MIN_SENTENCE_CHARS]
    if len(sentences) >= 2:
        articles.append((title, sentences))
    return articles


def write_synthetic_corpus(out: Path, n: int, seed: int = 0, source: Path | None = None, progress=None) -> dict:
    """Write n passages to out/corpus.jsonl (atomically) and return {path, passages, articles, sentences, bytes}."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RagError(f"--n must be a positive whole number of passages, got {n!r}")
    source = Path(source) if source else data_dir() / "wiki-lm" / "wiki.train.raw"
    if not source.exists():
        raise RagError(f"no sentences to recombine at {source}; set RAG_DATA_DIR to the folder that holds wiki-lm/")
    articles = wiki_articles(source)
    if not articles:
        raise RagError(f"{source} holds no WikiText articles (' = Title = ' lines followed by text)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    block = 10_000

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            for start in range(0, n, block):
                size = min(block, n - start)
                which, lengths = rng.integers(0, len(articles), size), rng.integers(2, 7, size)
                strays, stray_from = rng.random(size) < 0.25, rng.integers(0, len(articles), size)
                for i in range(size):
                    title, sentences = articles[which[i]]
                    picked = [sentences[j] for j in rng.permutation(len(sentences))[: lengths[i]]]
                    if strays[i]:
                        other = articles[stray_from[i]][1]
                        picked.insert(int(rng.integers(0, len(picked) + 1)), other[int(rng.integers(0, len(other)))])
                    f.write(
                        json.dumps({"_id": f"synth-{start + i:07d}", "title": title, "text": " ".join(picked)}) + "\n"
                    )
                if progress:
                    progress(start + size, n)

    path = atomic_write(out / "corpus.jsonl", write)
    path.chmod(0o644)  # a corpus others read (atomic_write leaves its temporary file private)
    return {
        "path": str(path),
        "passages": n,
        "articles": len(articles),
        "sentences": sum(len(s) for _, s in articles),
        "bytes": path.stat().st_size,
        "source": str(source),
        "seed": seed,
    }
