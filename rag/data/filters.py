"""`where` filters on passage metadata: `source=GLOB` (e.g. 'source=docs/**/*.md') as a predicate on passages."""

from __future__ import annotations

import re

from rag.config import RagError


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
