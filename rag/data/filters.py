"""`where` filters on passage metadata: `source=GLOB` (e.g. 'source=docs/**/*.md') as a predicate on passages.

The glob becomes a regular expression run by RE2 (google-re2), an automaton engine that matches in time linear in
the text whatever the pattern: Python's `re` backtracks, and `*?*?*?…Z` takes 24 s at nine pairs.
"""

from __future__ import annotations

import re2

from rag.config import RagError


def glob_regex(pattern: str) -> str:
    """A path glob as RE2 syntax: `*` and `?` stay inside one folder, `**/` spans any number of folders. Every other
    character is a literal (written as `\\x{hex}` unless it is a letter or digit, so nothing is special)."""
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
            out.append(pattern[i] if pattern[i].isalnum() else "\\x{%x}" % ord(pattern[i]))
            i += 1
    return "(?s)" + "".join(out)


def compile_glob(pattern: str):
    """The compiled glob (an RE2 object: `.fullmatch(text)` in linear time), or RagError naming the problem."""
    try:
        return re2.compile(glob_regex(pattern))
    except re2.error as exc:  # e.g. a pattern over RE2's memory budget
        raise RagError(f"cannot use the filter pattern {pattern[:60]!r}: {exc}") from None


def parse_where(where: str | None):
    """A `source=GLOB` filter (e.g. 'source=docs/**/*.md') as a predicate on passages; None for no filter."""
    if where is None or not str(where).strip():
        return None
    key, sep, pattern = str(where).partition("=")
    if not sep or key.strip() != "source" or not pattern.strip():
        raise RagError(f"cannot read the filter {where!r}; write it as source=GLOB, e.g. --where 'source=docs/**/*.md'")
    regex = compile_glob(pattern.strip())
    return lambda p: regex.fullmatch(p.source) is not None
