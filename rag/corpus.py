"""Corpora: the built-in markdown corpus, BEIR-layout sets, SQuAD, and any folder of .md/.txt files.

Everything becomes a `Corpus` of `Passage`s (plus queries and qrels where the set has them).
Long documents are chunked into passages with stable ids: `<relative path>#<chunk number>`.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rag.config import BUILTIN_CORPUS_DIR, RagError, data_dir
from rag.limits import cap_passages

NAMED_CORPORA = {
    "builtin": "the project's own markdown documents (corpus/)",
    "scifact": "SciFact, BEIR layout (RAG_DATA_DIR/scifact)",
    "hotpotqa": "HotpotQA multi-hop, BEIR layout (RAG_DATA_DIR/hotpotqa)",
    "squad": "SQuAD v1.1 dev paragraphs and questions (RAG_DATA_DIR/squad)",
}
CHUNK_WORDS = 180  # a passage holds at most about this many words


@dataclass
class Passage:
    id: str
    title: str
    text: str
    source: str


@dataclass
class Query:
    id: str
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass
class Corpus:
    name: str
    passages: list[Passage]
    queries: list[Query] = field(default_factory=list)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    source: str = ""
    invalid_utf8: int = 0  # documents whose bytes were not valid UTF-8 (decoded with replacement)

    @cached_property
    def content_hash(self) -> str:
        """sha256 over every passage's id, title and text: changes whenever the content does."""
        h = hashlib.sha256()
        for p in self.passages:
            h.update(f"{p.id}\0{p.title}\0{p.text}\n".encode())
        return h.hexdigest()

    @cached_property
    def passage_by_id(self) -> dict[str, Passage]:
        return {p.id: p for p in self.passages}

    @property
    def safe_name(self) -> str:
        """A folder name for this corpus inside the index dir (never a path)."""
        return safe_corpus_name(self.name)


def safe_corpus_name(name: str) -> str:
    if name in NAMED_CORPORA:
        return name
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(name).name).strip(".-") or "corpus"
    digest = hashlib.sha1(str(Path(name).resolve()).encode()).hexdigest()[:8]
    return f"{stem}-{digest}"


# ---------------------------------------------------------------- reading text

def _decode(raw: bytes) -> tuple[str, bool]:
    """Decode UTF-8; return (text, was_valid). Invalid bytes become U+FFFD."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), False


def _read_jsonl(path: Path, required: tuple[str, ...] = ("_id",), strings: tuple[str, ...] = ("title", "text")
                ) -> tuple[list[dict], int]:
    """The JSON objects of a JSONL file; a malformed line is a RagError naming the file and the line number."""
    rows, invalid = [], 0
    with open(path, "rb") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError:
                text, invalid = line.decode("utf-8", errors="replace"), invalid + 1
            try:
                row = json.loads(text)
            except ValueError as e:
                raise RagError(f"{path}, line {number}: not valid JSON ({getattr(e, 'msg', e)}); fix or remove that line") from None
            bad = ["an object"] if not isinstance(row, dict) else (
                [f'"{k}"' for k in required if type(row.get(k)) not in (str, int)]
                + [f'"{k}" as a string' for k in strings if row.get(k) is not None and not isinstance(row.get(k), str)])
            if bad:
                raise RagError(f"{path}, line {number}: needs {bad[0]} ({text.strip()[:60]!r})")
            rows.append(row)
    return rows, invalid


# ---------------------------------------------------------------- chunking

def chunk_markdown(text: str, max_words: int = CHUNK_WORDS) -> list[tuple[str, str]]:
    """Split a markdown document into (section title, passage text) chunks.

    Sections start at '#' headings; a section longer than max_words is split at paragraph
    boundaries (a single over-long paragraph is split at max_words).
    """
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)", line)
        if m:
            sections.append((m.group(1).strip(), []))
        else:
            sections[-1][1].append(line)
    chunks = []
    for heading, lines in sections:
        paragraphs = [p.strip() for p in re.split(r"\n\s*\n", "\n".join(lines)) if p.strip()]
        words: list[str] = []
        for para in paragraphs:
            para_words = para.split()
            if words and len(words) + len(para_words) > max_words:
                chunks.append((heading, " ".join(words)))
                words = []
            words.extend(para_words)
            while len(words) > max_words:
                chunks.append((heading, " ".join(words[:max_words])))
                words = words[max_words:]
        if words:
            chunks.append((heading, " ".join(words)))
    return chunks


# ---------------------------------------------------------------- loaders

def load_folder(folder: Path, name: str | None = None) -> Corpus:
    """Any folder of .md/.txt files (recursively); README.md files are skipped only at the top level."""
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in {".md", ".txt"} and p.is_file())
    passages, invalid = [], 0
    for path in files:
        rel = path.relative_to(folder).as_posix()
        text, ok = _decode(path.read_bytes())
        invalid += not ok
        m = re.search(r"^#\s+(.+)$", text, flags=re.M)
        doc_title = m.group(1).strip() if m else path.stem.replace("-", " ").replace("_", " ")
        for i, (heading, chunk) in enumerate(chunk_markdown(text)):
            title = doc_title if not heading or heading == doc_title else f"{doc_title} — {heading}"
            passages.append(Passage(id=f"{rel}#{i}", title=title, text=chunk, source=rel))
    if not passages:
        raise RagError(f"no .md or .txt documents found in {folder}; point --corpus at a folder of text files")
    passages = cap_passages(passages)
    return Corpus(name=name or str(folder), passages=passages, source=str(folder), invalid_utf8=invalid)


def load_beir(folder: Path, name: str | None = None, split: str = "test") -> Corpus:
    """A BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""
    rows, invalid = _read_jsonl(folder / "corpus.jsonl")
    passages = cap_passages([
        Passage(id=str(r["_id"]), title=r.get("title") or "", text=r.get("text") or "", source=f"{folder.name}:{r['_id']}")
        for r in rows
    ])
    queries: list[Query] = []
    if (folder / "queries.jsonl").exists():
        qrows, q_invalid = _read_jsonl(folder / "queries.jsonl", ("_id", "text"), ())
        invalid += q_invalid
        queries = [Query(id=str(r["_id"]), text=r["text"], metadata=r.get("metadata") or {}) for r in qrows]
    qrels = load_qrels_file(folder / "qrels" / f"{split}.tsv") if (folder / "qrels" / f"{split}.tsv").exists() else {}
    if qrels:  # keep the queries that the split judges
        queries = [q for q in queries if q.id in qrels]
    return Corpus(name=name or str(folder), passages=passages, queries=queries, qrels=qrels,
                  source=str(folder), invalid_utf8=invalid)


def load_squad(path: Path) -> Corpus:
    """SQuAD v1.1: every paragraph is a passage; every question a query whose qrel is its paragraph."""
    data = json.loads(path.read_bytes().decode("utf-8"))
    passages, queries, qrels = [], [], {}
    for article in data["data"]:
        for i, para in enumerate(article["paragraphs"]):
            pid = f"{article['title']}#{i}"
            passages.append(Passage(id=pid, title=article["title"].replace("_", " "), text=para["context"], source=f"squad:{pid}"))
            for qa in para["qas"]:
                answers = [a["text"] for a in qa["answers"]]
                queries.append(Query(id=qa["id"], text=qa["question"], metadata={"answers": answers}))
                qrels[qa["id"]] = {pid: 1}
    return Corpus(name="squad", passages=passages, queries=queries, qrels=qrels, source=str(path))


def load_corpus(name_or_path: str | Path) -> Corpus:
    """Load a corpus by name (builtin, scifact, hotpotqa, squad) or by path (folder of text, or BEIR folder)."""
    name = str(name_or_path)
    if name == "builtin":
        return load_folder(BUILTIN_CORPUS_DIR, name="builtin")
    if name in ("scifact", "hotpotqa"):
        folder = data_dir() / name
        if not (folder / "corpus.jsonl").exists():
            raise RagError(f"corpus '{name}' not found at {folder}; set RAG_DATA_DIR to the folder that holds {name}/")
        return load_beir(folder, name=name)
    if name == "squad":
        path = data_dir() / "squad" / "dev-v1.1.json"
        if not path.exists():
            raise RagError(f"corpus 'squad' not found at {path}; set RAG_DATA_DIR to the folder that holds squad/")
        return load_squad(path)
    path = Path(name).expanduser()
    if path.is_dir():
        if (path / "corpus.jsonl").exists():
            return load_beir(path, name=name)
        return load_folder(path, name=name)
    raise RagError(f"unknown corpus '{name}'; valid names: {', '.join(NAMED_CORPORA)}, or a path to a folder of .md/.txt files or a BEIR folder")


def list_corpora() -> list[dict]:
    """Each named corpus with its source, document count and whether it is available here."""
    out = []
    for name, description in NAMED_CORPORA.items():
        paths = {
            "builtin": BUILTIN_CORPUS_DIR,
            "scifact": data_dir() / "scifact" / "corpus.jsonl",
            "hotpotqa": data_dir() / "hotpotqa" / "corpus.jsonl",
            "squad": data_dir() / "squad" / "dev-v1.1.json",
        }
        path = paths[name]
        available = path.exists()
        if not available:
            docs = None
        elif name == "builtin":
            docs = len([p for p in path.rglob("*") if p.suffix in {".md", ".txt"}])
        elif name == "squad":
            docs = sum(len(a["paragraphs"]) for a in json.loads(path.read_text())["data"])
        else:
            with open(path, "rb") as f:
                docs = sum(1 for line in f if line.strip())
        out.append({"name": name, "description": description, "source": str(path), "documents": docs, "available": available})
    return out


# ---------------------------------------------------------------- query sets and subsets

def load_queries_file(path: str | Path) -> list[Query]:
    path = Path(path)
    if not path.exists():
        raise RagError(f"queries file not found: {path}")
    rows, _ = _read_jsonl(path, ("_id", "text"), ())
    return [Query(id=str(r["_id"]), text=r["text"], metadata=r.get("metadata") or {}) for r in rows]


def load_qrels_file(path: str | Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (query-id, corpus-id, score; a header line is optional)."""
    path = Path(path)
    if not path.exists():
        raise RagError(f"qrels file not found: {path}")
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.strip().split("\t")
        if len(parts) < 3 or parts[0] == "query-id":
            continue
        try:
            score = int(float(parts[2]))
        except ValueError:
            continue
        qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


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
    return Corpus(name=f"{corpus.name}-sub{len(queries)}q{len(passages)}d", passages=passages, queries=queries,
                  qrels=qrels, source=corpus.source, invalid_utf8=corpus.invalid_utf8)
