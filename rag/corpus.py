"""Corpora: the built-in markdown corpus, BEIR-layout sets, SQuAD, and any folder of documents.

Everything becomes a `Corpus` of `Passage`s (plus queries and qrels where the set has them). A folder is read by
rag.ingest (markdown, HTML, PDF, reStructuredText, text) and chunked here into passages with stable ids,
`<relative path>#<chunk number>`: a chunk never crosses a heading or a page, and a code block is never split.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rag.config import BUILTIN_CORPUS_DIR, RagError, RagWarning, data_dir
from rag.ingest import FORMATS, Block, Unreadable, parse_markdown, read_document, scan_folder
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
    source: str  # a folder corpus: the file's path relative to the folder
    heading: str = ""  # the heading path inside the document, "Install › From source"
    page: int | None = None  # PDFs: the 1-based page
    mtime: float | None = None  # the file's modification time when read

    def as_dict(self) -> dict:
        """The stored form (passages.jsonl): the four old keys, plus metadata where there is some."""
        out = {"id": self.id, "title": self.title, "source": self.source, "text": self.text}
        out.update({k: v for k, v in (("heading", self.heading), ("page", self.page), ("mtime", self.mtime)) if v})
        return out


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
    skipped: list[tuple[str, str]] = field(default_factory=list)  # folder files not read: (path, reason)
    unsupported: dict[str, int] = field(default_factory=dict)  # folder files by unsupported extension

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

def _read_jsonl(path: Path, required: tuple[str, ...] = ("_id",), strings: tuple[str, ...] = ("title", "text")
                ) -> tuple[list[dict], int]:
    """The JSON objects of a JSONL file and how many lines were not valid UTF-8 (see iter_jsonl)."""
    counts = {"invalid_utf8": 0}
    return list(iter_jsonl(path, required, strings, counts)), counts["invalid_utf8"]


def iter_jsonl(path: Path, required: tuple[str, ...] = ("_id",), strings: tuple[str, ...] = ("title", "text"),
               counts: dict | None = None):
    """The JSON objects of a JSONL file, read lazily; a malformed line is a RagError naming the file and the line
    number. counts["invalid_utf8"] (when given) counts the lines that were not valid UTF-8."""
    invalid = 0
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
            if counts is not None:
                counts["invalid_utf8"] = counts.get("invalid_utf8", 0) + invalid
            invalid = 0
            yield row


# ---------------------------------------------------------------- chunking


def chunk_blocks(blocks: list[Block], max_words: int = CHUNK_WORDS) -> list[tuple[tuple[str, ...], int | None, str]]:
    """Group blocks into (heading path, page, text) chunks of at most about max_words words.

    A chunk never crosses a heading or a page. Blocks are joined whole; a code block is never split (an over-long
    one is a chunk of its own), an over-long text block is split at max_words.
    """
    chunks: list[tuple[tuple[str, ...], int | None, str]] = []
    parts: list[str] = []
    count, key = 0, None

    def flush():
        nonlocal parts, count
        if parts:
            chunks.append((*key, "\n\n".join(parts)))
        parts, count = [], 0

    for block in blocks:
        if (block.headings, block.page) != key:
            flush()
            key = (block.headings, block.page)
        n = len(block.text.split())
        if parts and count + n > max_words:
            flush()
        if block.kind == "code" or n <= max_words:
            parts.append(block.text)
            count += n
            continue
        words = block.text.split()
        for start in range(0, len(words), max_words):
            piece = words[start:start + max_words]
            if len(piece) == max_words:
                parts.append(" ".join(piece))
                flush()
            else:
                parts, count = [" ".join(piece)], len(piece)
    flush()
    return chunks


def chunk_markdown(text: str, max_words: int = CHUNK_WORDS) -> list[tuple[str, str]]:
    """(innermost heading, text) chunks of a markdown document (see chunk_blocks)."""
    return [(headings[-1] if headings else "", chunk) for headings, _, chunk in
            chunk_blocks(parse_markdown(text).blocks, max_words)]


# ---------------------------------------------------------------- loaders

def load_folder(folder: Path, name: str | None = None) -> Corpus:
    """Every supported document under a folder (see rag.ingest.FORMATS); what was not read is in .skipped and
    .unsupported, for the commands to report."""
    scan = scan_folder(folder)
    passages, invalid, skipped = [], 0, list(scan.skipped)
    for path in scan.files:
        rel = path.relative_to(folder).as_posix()
        try:
            doc = read_document(path)
            mtime = path.stat().st_mtime
        except (Unreadable, OSError) as e:
            skipped.append((rel, str(e)))
            continue
        invalid += not doc.valid_utf8
        for i, (headings, page, chunk) in enumerate(chunk_blocks(doc.blocks)):
            inner = headings[-1] if headings else ""
            title = doc.title if not inner or inner == doc.title else f"{doc.title} — {inner}"
            passages.append(Passage(id=f"{rel}#{i}", title=title, text=chunk, source=rel,
                                    heading=" › ".join(headings), page=page, mtime=mtime))
    if not passages:
        what = f" ({len(skipped)} files could not be read: {skipped[0][0]}: {skipped[0][1]} …)" if skipped else ""
        raise RagError(f"no readable documents ({', '.join(sorted(set(FORMATS)))}) found in {folder}{what}; "
                       "point --corpus at a folder of documents")
    passages = cap_passages(passages)
    return Corpus(name=name or str(folder), passages=passages, source=str(folder), invalid_utf8=invalid,
                  skipped=skipped, unsupported=dict(sorted(scan.unsupported.items())))


def folder_warnings(corpus: Corpus) -> list[str]:
    """One line per file that was not read and one line for unsupported extensions, with counts."""
    lines = [f"skipped {path}: {reason}" for path, reason in corpus.skipped]
    if corpus.unsupported:
        counts = ", ".join(f"{ext} ×{n}" for ext, n in corpus.unsupported.items())
        lines.append(f"not indexed, unsupported extension ({sum(corpus.unsupported.values())} files): {counts}; "
                     f"supported: {', '.join(sorted(set(FORMATS)))}")
    if corpus.invalid_utf8:
        lines.append(f"{corpus.invalid_utf8} documents were not valid UTF-8; bad bytes were replaced")
    return lines


# ---------------------------------------------------------------- filters

def glob_regex(pattern: str) -> re.Pattern:
    """A path glob as a regex: `*` and `?` stay inside one folder, `**/` spans any number of folders."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def parse_where(where: str | None):
    """A `source=GLOB` filter (e.g. 'source=docs/**/*.md') as a predicate on passages; None for no filter."""
    if where is None or not str(where).strip():
        return None
    key, sep, pattern = str(where).partition("=")
    if not sep or key.strip() != "source" or not pattern.strip():
        raise RagError(f"cannot read the filter {where!r}; write it as source=GLOB, e.g. --where 'source=docs/**/*.md'")
    regex = glob_regex(pattern.strip())
    return lambda p: bool(regex.match(p.source))

def beir_passage(row: dict, folder: Path) -> Passage:
    """One corpus.jsonl row of a BEIR folder as a passage."""
    return Passage(id=str(row["_id"]), title=row.get("title") or "", text=row.get("text") or "",
                   source=f"{folder.name}:{row['_id']}")


def load_beir(folder: Path, name: str | None = None, split: str = "test") -> Corpus:
    """A BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""
    rows, invalid = _read_jsonl(folder / "corpus.jsonl")
    passages = cap_passages([beir_passage(r, folder) for r in rows])
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
    raise RagError(f"unknown corpus '{name}'; valid names: {', '.join(NAMED_CORPORA)}, or a path to a folder of documents or a BEIR folder")


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


QRELS_LINE = re.compile(r"([^\t]+)\t([^\t]+)\t(-?\d+(?:\.\d*)?)(?:\t.*)?")  # query-id, corpus-id, score


def load_qrels_file(path: str | Path) -> dict[str, dict[str, int]]:
    """BEIR qrels TSV (query-id, corpus-id, score; header optional); malformed lines are counted in one warning."""
    path = Path(path)
    if not path.exists():
        raise RagError(f"qrels file not found: {path}")
    qrels: dict[str, dict[str, int]] = {}
    bad: list[int] = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        row = QRELS_LINE.fullmatch(line.strip())
        if row is None and line.strip() and not line.startswith("query-id"):
            bad.append(number)
        elif row is not None:
            qrels.setdefault(row[1], {})[row[2]] = int(float(row[3]))
    if bad:
        what = f"qrels file {path}: {len(bad)} malformed line(s), the first is line {bad[0]}; each line needs " \
               "query-id<TAB>corpus-id<TAB>score"
        if not qrels:
            raise RagError(what)
        warnings.warn(what + " (skipped)", RagWarning, stacklevel=2)
    return qrels


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
            for pid in ([doc] if doc in ids or doc not in by_source else by_source[doc]):
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
    return Corpus(name=f"{corpus.name}-sub{len(queries)}q{len(passages)}d", passages=passages, queries=queries,
                  qrels=qrels, source=corpus.source, invalid_utf8=corpus.invalid_utf8)
