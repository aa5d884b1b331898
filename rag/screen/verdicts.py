"""The injection screen's verdicts, stored: what the screen decided about a passage or a string, kept on disk so that
a question does not pay for screening text that was screened before (at `rag index build`, or by an earlier
question).

A verdict is keyed by the sha256 of the exact text screened and by the screen's fingerprint: the sha256 of every
file the screen's decision depends on (the code and word tables of rag.screen and rag.lexicon, the classifier's and
the verifier's weights). Change one byte of the text or of the screen and the verdict is not found, so the text is
screened again; a stored verdict can only ever be the one the current screen gives that text.

Verdicts live in one SQLite file in the cache folder (RAG_CACHE_DIR/screen/verdicts.sqlite), shared by every index
and process, like the embedding cache. Rows of an older fingerprint are deleted when a newer screen first writes. A
cache folder that cannot be written (read-only, full) only costs speed: the screen then runs on every question.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from contextlib import closing, contextmanager
from functools import lru_cache
from pathlib import Path

from rag.config import cache_dir

SCREEN_DIR = Path(__file__).resolve().parent
LEXICON_DIR = SCREEN_DIR.parent / "lexicon"
WEIGHTS = ("injection_classifier.npz", "injection_verifier.npz")
KINDS = ("passage", "string")  # a passage (its title and text, as screen_passages reads it); a string (guard_strings)
LOOKUP_BATCH = 500  # keys per SQL query (SQLite's host-parameter limit is far above)
_LOCK = threading.Lock()
_PRUNED: list[bool] = []  # [True] once this process has deleted older screens' rows


@lru_cache(maxsize=1)
def fingerprint() -> str:
    """sha256 over the screen's code, word tables and weights: what a stored verdict depends on."""
    from rag.models import model_file

    digest = hashlib.sha256()
    files = sorted(p for folder in (SCREEN_DIR, LEXICON_DIR) for p in folder.rglob("*") if p.is_file())
    for path in [*(p for p in files if "__pycache__" not in p.parts), *(model_file(w) for w in WEIGHTS)]:
        digest.update(path.name.encode() + b"\x00" + path.read_bytes())
    return digest.hexdigest()


def text_key(*parts: str) -> str:
    """The key of the text screened: sha256 of its parts joined by NUL (a passage's title and text)."""
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def store_path() -> Path:
    return cache_dir() / "screen" / "verdicts.sqlite"


def check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown verdict kind {kind!r}; kinds: {', '.join(KINDS)}")


@contextmanager
def _connection():
    """The store, opened (and its table made) for one transaction, then closed; one thread of this process at a time
    (SQLite's own locking orders processes)."""
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _LOCK, closing(sqlite3.connect(path, timeout=30)) as db, db:
        db.execute(
            "CREATE TABLE IF NOT EXISTS verdicts (fingerprint TEXT, kind TEXT, key TEXT, verdict TEXT,"
            " PRIMARY KEY (fingerprint, kind, key))"
        )
        yield db


def lookup(kind: str, keys: list[str]) -> dict[str, dict | None]:
    """The stored verdicts of these keys under the current screen: {key: None (clean) or the flag's record}; a key
    never screened is absent. An unreadable store is an empty one."""
    check_kind(kind)
    found: dict[str, dict | None] = {}
    wanted = sorted(set(keys))
    if not wanted:
        return found
    try:
        with _connection() as db:
            for b in range(0, len(wanted), LOOKUP_BATCH):
                chunk = wanted[b : b + LOOKUP_BATCH]
                rows = db.execute(
                    f"SELECT key, verdict FROM verdicts WHERE fingerprint = ? AND kind = ? AND key IN "
                    f"({','.join('?' * len(chunk))})",
                    [fingerprint(), kind, *chunk],
                )
                found.update((key, json.loads(verdict) if verdict else None) for key, verdict in rows)
    except (sqlite3.Error, OSError, ValueError):
        return {}
    return found


def store(kind: str, verdicts: dict[str, dict | None]) -> bool:
    """Keep these verdicts ({key: None or a JSON-able record}); False when the store could not be written."""
    check_kind(kind)
    if not verdicts:
        return True
    rows = [(fingerprint(), kind, key, json.dumps(v) if v else "") for key, v in verdicts.items()]
    try:
        with _connection() as db:
            if not _PRUNED:  # once per process: the rows an older screen wrote
                db.execute("DELETE FROM verdicts WHERE fingerprint != ?", (fingerprint(),))
                _PRUNED.append(True)
            db.executemany("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)", rows)
    except (sqlite3.Error, OSError):
        return False
    return True
