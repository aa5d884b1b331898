"""A folder's parsed files, kept between commands: `rag search` and `rag ask` read a folder corpus on every call (to
see whether it changed since its index was built), and parsing is most of that (3,154 Markdown files: 1.98 s with
every file parsed, 0.51 s with one edited file parsed and the rest read from here; docs/scale/folder_update_cost.json).

One JSON file per folder in RAG_CACHE_DIR/parsed/, holding for each file that was read the passages it became,
keyed by its path in the folder and the sha256 of its bytes, under a stamp of the chunking and the parsers'
fingerprint (the source of rag.data and the versions of the parsing libraries). A file whose bytes changed is parsed
again; so is every file when rag or a parser is upgraded. Includes are never read (they become a reference line), so
a file's passages depend on its own bytes and name alone. The cache holds only what the folder's own files produced;
a cache file that cannot be read or does not match is ignored and rewritten, never trusted as code (plain JSON, no
pickle). `rag index prune` removes the files of folders that no longer exist.
"""

from __future__ import annotations

import hashlib
import json
import platform
from functools import cache
from importlib import metadata
from pathlib import Path

from rag.config import atomic_write_text, cache_path

PARSERS = ("markdown-it-py", "mdit-py-plugins", "docutils", "pypdf", "tokenizers", "PyYAML")
FORMAT_VERSION = 1


@cache
def fingerprint() -> str:
    """sha256 over the rag.data sources, the installed parsers' versions and Python's (html.parser is its own)."""
    h = hashlib.sha256(f"v{FORMAT_VERSION} python {platform.python_version()}".encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        h.update(source.name.encode() + b"\0" + source.read_bytes())
    for name in PARSERS:
        try:
            h.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=none".encode())
    return h.hexdigest()


class ParsedFiles:
    """The cache of one folder: get(key(raw, name)) -> the entry stored for a file, or None; put() stores one;
    save() writes what this read used (entries of files no longer read are dropped)."""

    def __init__(self, folder: Path, chunking: str):
        self.folder = str(Path(folder).resolve())
        self.path = cache_root() / f"{hashlib.sha256(self.folder.encode()).hexdigest()[:16]}.json"
        self.stamp = f"{fingerprint()}:{chunking}"
        self.old: dict[str, dict] = {}
        self.used: dict[str, dict] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("stamp") == self.stamp and isinstance(data.get("files"), dict):
                self.old = data["files"]
        except (OSError, ValueError, AttributeError):
            pass  # absent or damaged: parse everything and rewrite it

    @staticmethod
    def key(raw: bytes, name: str) -> str:
        """The file's path in the folder (a page without a title is titled by its name) and its bytes' sha256."""
        return f"{name}:{hashlib.sha256(raw).hexdigest()}"

    def get(self, key: str) -> dict | None:
        entry = self.used.get(key) or self.old.get(key)
        if not valid(entry):
            return None
        self.used[key] = entry
        return entry

    def put(self, key: str, chunks: list, valid_utf8: bool, notes: list[str]) -> dict:
        self.used[key] = {
            "chunks": [[title, list(headings), page, text] for title, headings, page, text in chunks],
            "valid_utf8": bool(valid_utf8),
            "notes": [str(n) for n in notes],
        }
        return self.used[key]

    def save(self) -> None:
        """Write the entries this read used, when they differ from what was there; an unwritable cache is skipped."""
        if self.used == self.old:
            return
        try:
            data = {"folder": self.folder, "stamp": self.stamp, "files": self.used}
            atomic_write_text(self.path, json.dumps(data, ensure_ascii=False))
        except OSError:
            pass  # a read-only cache folder: the next call parses again


def cache_root() -> Path:
    return cache_path() / "parsed"  # created by the first save, not by a read


def orphans() -> list[Path]:
    """The cache files whose folder no longer exists, or that cannot be read (rag index prune removes them)."""
    out = []
    for path in sorted(cache_root().glob("*.json")):
        try:
            folder = json.loads(path.read_text(encoding="utf-8")).get("folder")
        except (OSError, ValueError, AttributeError):
            folder = None
        if not isinstance(folder, str) or not Path(folder).is_dir():
            out.append(path)
    return out


def valid(entry) -> bool:
    """Whether a stored entry has the shape put() writes (a hand-edited or truncated cache is parsed again)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("chunks"), list):
        return False
    return (
        all(
            isinstance(c, list)
            and len(c) == 4
            and isinstance(c[0], str)
            and isinstance(c[1], list)
            and all(isinstance(h, str) for h in c[1])
            and (c[2] is None or isinstance(c[2], int))
            and isinstance(c[3], str)
            for c in entry["chunks"]
        )
        and isinstance(entry.get("valid_utf8"), bool)
        and isinstance(entry.get("notes"), list)
    )
