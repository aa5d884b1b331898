"""The files of a BEIR-layout set: JSONL (corpus, queries) read line by line, and qrels TSV. A malformed line is an
error naming the file and the line (JSON nested too deep included), or, in qrels, one warning with the count; bad
bytes are counted."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

from rag.config import RagError, RagWarning


def read_jsonl(
    path: Path, required: tuple[str, ...] = ("_id",), strings: tuple[str, ...] = ("title", "text")
) -> tuple[list[dict], int]:
    """The JSON objects of a JSONL file and how many lines were not valid UTF-8 (see iter_jsonl)."""
    counts = {"invalid_utf8": 0}
    return list(iter_jsonl(path, required, strings, counts)), counts["invalid_utf8"]


def iter_jsonl(
    path: Path,
    required: tuple[str, ...] = ("_id",),
    strings: tuple[str, ...] = ("title", "text"),
    counts: dict | None = None,
):
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
                raise RagError(
                    f"{path}, line {number}: not valid JSON ({getattr(e, 'msg', e)}); fix or remove that line"
                ) from None
            except RecursionError:  # arrays or objects nested thousands deep
                raise RagError(f"{path}, line {number}: JSON nested too deep; fix or remove that line") from None
            bad = (
                ["an object"]
                if not isinstance(row, dict)
                else (
                    [f'"{k}"' for k in required if type(row.get(k)) not in (str, int)]
                    + [
                        f'"{k}" as a string'
                        for k in strings
                        if row.get(k) is not None and not isinstance(row.get(k), str)
                    ]
                )
            )
            if bad:
                raise RagError(f"{path}, line {number}: needs {bad[0]} ({text.strip()[:60]!r})")
            if counts is not None:
                counts["invalid_utf8"] = counts.get("invalid_utf8", 0) + invalid
            invalid = 0
            yield row


QRELS_LINE = re.compile(r"([^\t]+)\t([^\t]+)\t(-?\d+(?:\.\d*)?)(?:\t.*)?")  # query-id, corpus-id, score
MAX_QREL_SCORE = 1000  # graded relevance is a small integer; pytrec_eval stores a C int (a huge one is SystemError)


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
            score = float(row[3]) if len(row[3]) <= 20 else float("inf")
            if abs(score) > MAX_QREL_SCORE:
                bad.append(number)
                continue
            qrels.setdefault(row[1], {})[row[2]] = int(score)
    if bad:
        what = (
            f"qrels file {path}: {len(bad)} malformed line(s), the first is line {bad[0]}; each line needs "
            f"query-id<TAB>corpus-id<TAB>score, the score an integer from -{MAX_QREL_SCORE} to {MAX_QREL_SCORE}"
        )
        if not qrels:
            raise RagError(what)
        warnings.warn(what + " (skipped)", RagWarning, stacklevel=2)
    return qrels
