"""WikiText-layout corpora, the byte-level BPE tokenizer, cached token ids and batches.

A corpus is a folder with wiki.{train,valid,test}.raw (or .tokens). Names resolve as:
`wiki-lm` and other names -> RAG_DATA_DIR/<name>; `wikitext-2` -> RAG_DATA_DIR/wikitext-2 when its
three splits are there, else RAG_CACHE_DIR/lm/data/wikitext-2, downloaded from the official archive
(RAG_WIKITEXT2_URL overrides the address) when missing; anything else is taken as a folder path.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.config import RagError, cache_dir, data_dir

SPLITS = ("train", "valid", "test")
WIKITEXT2_URL = "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip"
EOT = "<|endoftext|>"
PROBE_STEP = 10**9  # batches for throughput probes come from steps no run reaches


@dataclass
class CorpusFiles:
    name: str
    folder: Path
    files: dict[str, Path]  # split -> file

    def fingerprint(self) -> str:
        """Content hash of the three split files (keys the tokenizer and token caches)."""
        h = hashlib.sha256()
        for split in SPLITS:
            with open(self.files[split], "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
        return h.hexdigest()[:16]


def split_files(folder: Path) -> tuple[dict[str, Path], list[str]]:
    """Which split files exist in folder (.raw preferred), and the names of the missing ones."""
    found, missing = {}, []
    for split in SPLITS:
        for ext in ("raw", "tokens"):
            if (folder / f"wiki.{split}.{ext}").is_file():
                found[split] = folder / f"wiki.{split}.{ext}"
                break
        else:
            missing.append(f"wiki.{split}.raw")
    return found, missing


def download_wikitext2(target: Path, url: str | None = None, timeout: float = 60.0) -> Path:
    """Fetch the WikiText-2 zip and extract its three split files into target (atomically)."""
    url = url or os.environ.get("RAG_WIKITEXT2_URL") or WIKITEXT2_URL
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            payload = response.read()
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except (OSError, zipfile.BadZipFile) as exc:
        raise RagError(
            f"wikitext-2 is missing its train split and the download from {url} failed ({exc}); "
            f"put wiki.{{train,valid,test}}.raw in {target} or use --corpus wiki-lm"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".wikitext2-"))
    for member in archive.namelist():
        base = member.rsplit("/", 1)[-1]
        if base.startswith("wiki.") and base.split(".")[1] in SPLITS and base.endswith((".raw", ".tokens")):
            (tmp / base).write_bytes(archive.read(member))
    found, missing = split_files(tmp)
    if missing:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RagError(
            f"the archive from {url} lacks {', '.join(missing)}; point RAG_WIKITEXT2_URL at the official wikitext-2 zip"
        )
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)
    return target


def resolve_corpus(name: str) -> CorpusFiles:
    """Find (or, for wikitext-2, download) a corpus; a missing split raises an error naming the file."""
    candidates = [data_dir() / name]
    if name == "wikitext-2":
        cached = cache_dir() / "lm" / "data" / "wikitext-2"
        for folder in candidates + [cached]:
            if folder.is_dir() and not split_files(folder)[1]:
                return CorpusFiles(name, folder, split_files(folder)[0])
        folder = download_wikitext2(cached)
        return CorpusFiles(name, folder, split_files(folder)[0])
    folder = candidates[0] if candidates[0].is_dir() else Path(name).expanduser()
    if not folder.is_dir():
        raise RagError(
            f"corpus {name!r} not found: neither {candidates[0]} nor the folder {folder} exists; "
            "use --corpus wiki-lm or a folder holding wiki.{train,valid,test}.raw"
        )
    found, missing = split_files(folder)
    if missing:
        raise RagError(f"corpus {name!r} is missing {folder / missing[0]} (also accepted: .tokens); add the split file")
    return CorpusFiles(Path(name).name if folder != candidates[0] else name, folder, found)


# ------------------------------------------------------------------ tokenizer and token ids


def train_tokenizer(train_file: Path, vocab: int):
    """Byte-level BPE with exactly `vocab` entries, trained on the train split only."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    tok.train([str(train_file)], vocab_size=vocab, min_frequency=2, special_tokens=[EOT], show_progress=False)
    got = tok.get_vocab_size()
    if got < vocab:
        text = train_file.read_text(encoding="utf-8", errors="replace")
        raise RagError(
            f"corpus too small for the vocabulary: the train split ({len(text.split())} words, "
            f"{len(text)} characters) yields only {got} BPE tokens, but --vocab is {vocab}; "
            "use a bigger corpus or a smaller --vocab"
        )
    return tok


def load_tokenizer(path: Path):
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path))


def encode_file(tok, path: Path) -> np.ndarray:
    """Token ids (uint16) of a split, lines encoded in batches; empty lines dropped."""
    lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True) if ln.strip()]
    ids: list[int] = []
    for start in range(0, len(lines), 4096):
        for enc in tok.encode_batch(lines[start : start + 4096]):
            ids.extend(enc.ids)
    if tok.get_vocab_size() > 65535:
        raise RagError(f"vocab {tok.get_vocab_size()} does not fit uint16 token caches; use --vocab <= 65535")
    return np.asarray(ids, dtype=np.uint16)


@dataclass
class TokenizedCorpus:
    corpus: CorpusFiles
    vocab: int
    folder: Path  # cache folder holding tokenizer.json and {split}.npy
    ids: dict[str, np.ndarray]  # split -> uint16 ids
    words: dict[str, int]  # split -> whitespace word count (for per-word perplexity)

    @property
    def tokenizer_path(self) -> Path:
        return self.folder / "tokenizer.json"


def prepare(corpus: str | CorpusFiles, vocab: int) -> TokenizedCorpus:
    """Train (once) the tokenizer and tokenize (once) every split; cached in RAG_CACHE_DIR/lm/tok/."""
    files = resolve_corpus(corpus) if isinstance(corpus, str) else corpus
    folder = cache_dir() / "lm" / "tok" / f"{files.name.replace('/', '_')}-{files.fingerprint()}-v{vocab}"
    meta_path = folder / "meta.json"
    if not meta_path.exists():
        tok = train_tokenizer(files.files["train"], vocab)
        tmp = Path(
            tempfile.mkdtemp(dir=folder.parent if folder.parent.exists() else _mk(folder.parent), prefix=".tok-")
        )
        tok.save(str(tmp / "tokenizer.json"))
        words = {}
        for split in SPLITS:
            np.save(tmp / f"{split}.npy", encode_file(tok, files.files[split]))
            words[split] = len(files.files[split].read_text(encoding="utf-8", errors="replace").split())
        (tmp / "meta.json").write_text(json.dumps({"corpus": files.name, "vocab": vocab, "words": words}))
        try:
            tmp.rename(folder)
        except OSError:  # another process got there first
            shutil.rmtree(tmp, ignore_errors=True)
    meta = json.loads(meta_path.read_text())
    ids = {split: np.load(folder / f"{split}.npy") for split in SPLITS}
    return TokenizedCorpus(files, vocab, folder, ids, meta["words"])


def _mk(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# ------------------------------------------------------------------ batches


def train_batch(ids: np.ndarray, step: int, batch: int, context: int, seed: int, rank: int = 0):
    """Random windows for one step; a pure function of (seed, rank, step) so a resumed run sees the same data."""
    import torch

    rng = np.random.default_rng([seed, rank, step])
    starts = rng.integers(0, len(ids) - context - 1, size=batch)
    window = np.stack([ids[s : s + context + 1] for s in starts]).astype(np.int64)
    window = torch.from_numpy(window)
    return window[:, :-1], window[:, 1:]


def eval_batches(ids: np.ndarray, batch: int, context: int, max_tokens: int | None = None):
    """Consecutive non-overlapping windows from the start of a split (at most max_tokens targets)."""
    import torch

    n = (len(ids) - 1) // context
    if max_tokens:
        n = min(n, max(1, max_tokens // context))
    for start in range(0, n, batch):
        rows = range(start, min(n, start + batch))
        w = np.stack([ids[r * context : r * context + context + 1] for r in rows]).astype(np.int64)
        w = torch.from_numpy(w)
        yield w[:, :-1], w[:, 1:]


def eval_token_count(ids: np.ndarray, context: int, max_tokens: int | None = None) -> int:
    n = (len(ids) - 1) // context
    if max_tokens:
        n = min(n, max(1, max_tokens // context))
    return n * context
