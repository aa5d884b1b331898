"""Corpora: the built-in markdown corpus, BEIR-layout sets, SQuAD, and any folder of documents.

Everything becomes a `Corpus` of `Passage`s (plus queries and qrels where the set has them). A folder is read by
rag.data.ingest (markdown, HTML, PDF, reStructuredText, text) and chunked here into passages with stable ids,
`<relative path>#<chunk number>`: a chunk never crosses a heading or a page. `FOLDER_CHUNKING` picks how:
"words" (rag.data.chunking: at most about 180 words, a code block never split, titled with the innermost heading)
or "tokens" (rag.data.token_chunks: title line + text within MiniLM's 256-token window, titled with the page title
and heading path, a long code block cut at line ends). A BEIR set's documents are read whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rag.config import BUILTIN_CORPUS_DIR, RagError, data_dir, escape_controls
from rag.data.budget import Budget
from rag.data.chunking import chunk_blocks
from rag.data.files import load_qrels_file, read_jsonl
from rag.data.ingest import FORMATS, Unreadable, parse_document, read_file, scan_folder
from rag.data.limits import cap_passages, capped
from rag.data.parsed_cache import ParsedFiles
from rag.data.token_chunks import chunk_by_tokens, encoder_tokenizer, title_for

FOLDER_CHUNKING = "words"  # how a folder's documents become passages: "words" or "tokens" (see the module's text)
CHUNKINGS = ("words", "tokens")

NAMED_CORPORA = {
    "builtin": "the project's own markdown documents (corpus/)",
    "scifact": "SciFact, BEIR layout (RAG_DATA_DIR/scifact)",
    "hotpotqa": "HotpotQA multi-hop, BEIR layout (RAG_DATA_DIR/hotpotqa)",
    "squad": "SQuAD v1.1 dev paragraphs and questions (RAG_DATA_DIR/squad)",
}


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
    notes: list[tuple[str, str]] = field(default_factory=list)  # folder files read with a part left out
    capped: str = ""  # what rag.data.limits cut or split, or ""

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


# ---------------------------------------------------------------- loaders


def folder_chunks(doc, chunking: str) -> list[tuple[str, tuple[str, ...], int | None, str]]:
    """A read document's (title, heading path, page, text) passages, chunked by `chunking` (CHUNKINGS)."""
    if chunking == "tokens":
        tokenizer, window = encoder_tokenizer()
        return [
            (title_for(doc.title, headings), headings, page, text)
            for headings, page, text in chunk_by_tokens(doc.blocks, doc.title, tokenizer, window)
        ]
    if chunking != "words":
        raise RagError(f"unknown chunking '{chunking}'; valid: {', '.join(CHUNKINGS)}")
    out = []
    for headings, page, text in chunk_blocks(doc.blocks):
        inner = headings[-1] if headings else ""
        out.append((doc.title if not inner or inner == doc.title else f"{doc.title} — {inner}", headings, page, text))
    return out


def load_folder(folder: Path, name: str | None = None, chunking: str = FOLDER_CHUNKING) -> Corpus:
    """Every supported document under a folder (see rag.data.ingest.FORMATS); what was not read is in .skipped and
    .unsupported, for the commands to report."""
    scan, root = scan_folder(folder), folder.resolve()
    passages, invalid, skipped, notes = [], 0, list(scan.skipped), []
    parsed = ParsedFiles(root, chunking)
    for path in scan.files:
        rel = path.relative_to(folder).as_posix()
        try:
            raw, info = read_file(path, root)
            key = parsed.key(raw, rel)
            entry = parsed.get(key)
            if entry is None:
                doc = parse_document(path, raw, info)
                chunks = folder_chunks(doc, chunking)
                Budget.for_size(doc.size).check_passages(len(chunks))
                entry = parsed.put(key, chunks, doc.valid_utf8, doc.notes)
        except (Unreadable, OSError) as e:
            skipped.append((rel, str(e) or type(e).__name__))
            continue
        invalid += not entry["valid_utf8"]
        notes += [(rel, note) for note in entry["notes"]]
        for i, (title, headings, page, chunk) in enumerate(entry["chunks"]):
            passages.append(
                Passage(
                    id=f"{rel}#{i}",
                    title=title,
                    text=chunk,
                    source=rel,
                    heading=" › ".join(headings),
                    page=page,
                    mtime=info.st_mtime,
                )
            )
    parsed.save()
    if not passages:
        what = f" ({len(skipped)} files could not be read: {skipped[0][0]}: {skipped[0][1]} …)" if skipped else ""
        raise RagError(
            f"no readable documents ({', '.join(sorted(set(FORMATS)))}) found in {folder}{what}; "
            "point --corpus at a folder of documents"
        )
    passages, capped_note = capped(passages)  # said once, by the command that builds (folder_warnings)
    return Corpus(
        name=name or str(folder),
        passages=passages,
        source=str(folder),
        invalid_utf8=invalid,
        skipped=skipped,
        unsupported=dict(sorted(scan.unsupported.items())),
        notes=notes,
        capped=capped_note,
    )


def folder_warnings(corpus: Corpus) -> list[str]:
    """One line per file that was not read and one line for unsupported extensions, with counts."""
    lines = [f"skipped {escape_controls(path)}: {escape_controls(reason)}" for path, reason in corpus.skipped]
    lines += [f"read partly {escape_controls(path)}: {escape_controls(note)}" for path, note in corpus.notes]
    if corpus.unsupported:
        counts = ", ".join(f"{ext} ×{n}" for ext, n in corpus.unsupported.items())
        lines.append(
            f"not indexed, unsupported extension ({sum(corpus.unsupported.values())} files): {counts}; "
            f"supported: {', '.join(sorted(set(FORMATS)))}"
        )
    if corpus.capped:
        lines.append(corpus.capped)
    if corpus.invalid_utf8:
        lines.append(f"{corpus.invalid_utf8} documents were not valid UTF-8; bad bytes were replaced")
    return lines


def beir_passage(row: dict, folder: Path) -> Passage:
    """One corpus.jsonl row of a BEIR folder as a passage."""
    return Passage(
        id=str(row["_id"]),
        title=row.get("title") or "",
        text=row.get("text") or "",
        source=f"{folder.name}:{row['_id']}",
    )


def load_beir(folder: Path, name: str | None = None, split: str = "test") -> Corpus:
    """A BEIR-layout folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv."""
    rows, invalid = read_jsonl(folder / "corpus.jsonl")
    passages = cap_passages([beir_passage(r, folder) for r in rows])
    queries: list[Query] = []
    if (folder / "queries.jsonl").exists():
        qrows, q_invalid = read_jsonl(folder / "queries.jsonl", ("_id", "text"), ())
        invalid += q_invalid
        queries = [Query(id=str(r["_id"]), text=r["text"], metadata=r.get("metadata") or {}) for r in qrows]
    qrels = load_qrels_file(folder / "qrels" / f"{split}.tsv") if (folder / "qrels" / f"{split}.tsv").exists() else {}
    if qrels:  # keep the queries that the split judges
        queries = [q for q in queries if q.id in qrels]
    return Corpus(
        name=name or str(folder),
        passages=passages,
        queries=queries,
        qrels=qrels,
        source=str(folder),
        invalid_utf8=invalid,
    )


def load_squad(path: Path) -> Corpus:
    """SQuAD v1.1: every paragraph is a passage; every question a query whose qrel is its paragraph."""
    data = json.loads(path.read_bytes().decode("utf-8"))
    passages, queries, qrels = [], [], {}
    for article in data["data"]:
        for i, para in enumerate(article["paragraphs"]):
            pid = f"{article['title']}#{i}"
            passages.append(
                Passage(id=pid, title=article["title"].replace("_", " "), text=para["context"], source=f"squad:{pid}")
            )
            for qa in para["qas"]:
                answers = [a["text"] for a in qa["answers"]]
                queries.append(Query(id=qa["id"], text=qa["question"], metadata={"answers": answers}))
                qrels[qa["id"]] = {pid: 1}
    return Corpus(name="squad", passages=passages, queries=queries, qrels=qrels, source=str(path))


def looks_like_path(name: str) -> bool:
    """Whether a corpus name was meant as a path: it has a separator, or starts with '.' or '~'."""
    return "/" in name or "\\" in name or name.startswith((".", "~"))


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
    if path.exists():
        raise RagError(f"not a folder: {name}; --corpus takes a folder of documents (or a corpus name)")
    if looks_like_path(name):
        raise RagError(f"no such folder: {name}; check the path, or name a corpus: {', '.join(NAMED_CORPORA)}")
    raise RagError(
        f"unknown corpus '{name}'; valid names: {', '.join(NAMED_CORPORA)}, or a path to a folder of documents or a BEIR folder"
    )


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
        out.append(
            {"name": name, "description": description, "source": str(path), "documents": docs, "available": available}
        )
    return out
