"""Why a `where` filter kept nothing, in one line: the closest sources, and the glob that would have matched.

Kept apart from rag.data.filters (the matcher) so that the matcher stays small; it only calls parse_where.
"""

from __future__ import annotations

import difflib
from types import SimpleNamespace

from rag.data.filters import parse_where


def matching(where: str, sources: list[str]) -> list[str]:
    keep = parse_where(where)
    return [s for s in sources if keep(SimpleNamespace(source=s))] if keep else list(sources)


def where_hint(where: str | None, sources: list[str], corpus: str = "the corpus", shown: int = 3) -> str | None:
    """None when the filter matches some source (or there is none); else one line saying that nothing matched,
    the glob that would have (`*` stays inside one folder, `**/` spans folders) and the closest sources."""
    if where is None or not str(where).strip():
        return None
    unique = sorted(set(sources))
    if not unique or matching(where, unique):
        return None
    pattern = str(where).partition("=")[2].strip()
    line = f"the filter '{where}' matches none of the {len(unique):,} sources in {corpus}"
    for better in (f"**/{pattern}", f"{pattern.rstrip('/')}/**", f"**/{pattern.rstrip('/')}/**"):
        if better != pattern and (hits := matching(f"source={better}", unique)):
            line += (
                f"; `*` stays inside one folder: did you mean --where 'source={better}' "
                f"({len(hits):,} source{'s' if len(hits) != 1 else ''})?"
            )
            break
    else:
        line += "."
    close = difflib.get_close_matches(pattern, unique, n=shown, cutoff=0.0) or unique[:shown]
    return line + " Closest sources: " + ", ".join(close)
