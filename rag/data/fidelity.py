"""How faithfully a folder's documents reach its passages: a check that reads the sources on its own terms.

For each Markdown and reST file, the identifiers its prose marks as code (`` `name` `` in Markdown; ``` ``name`` ```,
`` `name` `` and roles such as `` :meth:`~a.B.c` `` in reST, expected as Sphinx shows them) are collected from the
source text with plain regular expressions, outside code blocks and comments, independently of the readers in
rag.data.ingest. The check reports the share of them found in the passages built from the same file, and the
passages that carry a parser message (docutils' "(ERROR/3) Unknown interpreted text role" and the like) or markup
a reader should have rendered (a raw `:class:` role, a `!!! note` or `///` marker, an include line), outside code
blocks: both must be none.

    python -m rag.data.fidelity DIR [DIR ...]     # one JSON object per folder
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path

IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*(?:\(\))?")
MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
MD_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
RST_ROLE = re.compile(r"(?<![\w\\`]):[\w.:+-]+:`([^`]+)`")
RST_LITERAL = re.compile(r"``([^`]+)``")
RST_DEFAULT = re.compile(r"(?<![\w:`\\])`([^`<>]+)`(?![_`:\w])")
RST_EXPLICIT = re.compile(r"^(.+?)\s*<([^<>]*)>$", re.S)
DEBRIS = re.compile(
    r"(?<![\w`]):[a-z][\w.:+-]*:`|^\s*(?:!!!|\?\?\?\+?|===\+?) |^\s*/{3,}|\{\*.*\*\}|\{!.*!\}|--8<--|^\s*\.\. [\w:-]+::",
    re.M,
)  # markup a reader should have rendered: reST roles and directives, mkdocs markers and includes
CODE_FENCED = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.M | re.S)
PARSER_MESSAGE = re.compile(
    r"\((?:DEBUG|INFO|WARNING|ERROR|SEVERE)/[0-4]\)|<string>:\d+:|Unknown interpreted text role|"
    r"Unknown directive type|No role entry for|No directive entry for"
)


def markdown_prose(text: str) -> list[str]:
    """The lines of a Markdown page outside fenced code, front matter and HTML comments."""
    lines, out, fence = text.splitlines(), [], ""
    start = 0
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0)
        start = end + 1 if end else 0
    for line in lines[start:]:
        stripped = line.strip()
        if fence:
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
            continue
        if m := MD_FENCE.match(line.lstrip()):
            fence = m.group(1)
            continue
        out.append(line)
    return re.sub(r"<!--.*?-->", "", "\n".join(out), flags=re.S).splitlines()


def markdown_identifiers(text: str) -> list[str]:
    found = []
    for line in markdown_prose(text):
        found += [m.group(2).strip() for m in MD_CODE.finditer(line)]
    return [f for f in found if IDENTIFIER.fullmatch(f)]


def rst_prose(text: str) -> list[str]:
    """The lines of a reST page outside literal blocks (after `::`), comments and directive options."""
    out, skip_indent = [], None
    previous = ""
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if not line.strip() or indent > skip_indent:
                continue
            skip_indent = None
        stripped = line.strip()
        if (
            stripped.startswith(".. ")
            and not re.match(r"\.\. [\w.:+-]+::", stripped)
            and not stripped.startswith((".. |", ".. _"))
        ):
            skip_indent = indent  # a comment and its indented continuation
            continue
        if re.match(r"\.\. (code-block|sourcecode|code|literalinclude|include|raw|highlight|mermaid)::", stripped):
            skip_indent = indent
            continue
        if stripped.startswith(":") and re.match(r":[\w-]+:( |$)", stripped) and previous.strip().startswith(".."):
            continue
        out.append(line)
        previous = line if stripped else previous
        if stripped.endswith("::") and not re.match(r"\.\. [\w.:+-]+::", stripped):
            skip_indent = indent
    return out


def role_shown(text: str) -> str:
    """What Sphinx shows for a role: its explicit title, else its target (`~` keeps the last part)."""
    if m := RST_EXPLICIT.match(text):
        return " ".join(m.group(1).split())
    text = text.strip().lstrip("!")
    return text[1:].rsplit(".", 1)[-1] if text.startswith("~") else text


def rst_identifiers(text: str) -> list[str]:
    prose = "\n".join(rst_prose(text))
    found = [role_shown(m.group(1)) for m in RST_ROLE.finditer(prose)]
    prose = RST_ROLE.sub(" ", prose)
    found += [m.group(1).strip() for m in RST_LITERAL.finditer(prose)]
    found += [m.group(1).strip() for m in RST_DEFAULT.finditer(RST_LITERAL.sub(" ", prose))]
    return [f for f in found if IDENTIFIER.fullmatch(f)]


def squash(text: str) -> str:
    return " ".join(text.split())


def fidelity(folder: str | Path, corpus=None) -> dict:
    """The share of marked identifiers found in the passages of their own file, per folder, with the misses
    (file, identifier) and the passages holding parser messages."""
    from rag.data.corpus import load_corpus

    folder = Path(folder)
    if corpus is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            corpus = load_corpus(str(folder))
    text_by_source: dict[str, list[str]] = defaultdict(list)
    for p in corpus.passages:
        text_by_source[p.source].append(squash(f"{p.title} {p.heading} {p.text}"))
    total = found = 0
    misses: list[tuple[str, str]] = []
    for source, parts in sorted(text_by_source.items()):
        suffix = Path(source).suffix.lower()
        if suffix not in (".md", ".markdown", ".rst"):
            continue
        raw = (folder / source).read_text(encoding="utf-8", errors="replace")
        wanted = markdown_identifiers(raw) if suffix in (".md", ".markdown") else rst_identifiers(raw)
        built = "\n".join(parts)
        for name in wanted:
            total += 1
            if name in built:
                found += 1
            else:
                misses.append((source, name))
    messages = [p.id for p in corpus.passages if PARSER_MESSAGE.search(p.text)]
    debris = [p.id for p in corpus.passages if DEBRIS.search(CODE_FENCED.sub("", p.text))]
    return {
        "folder": str(folder),
        "passages": len(corpus.passages),
        "identifiers": total,
        "found": found,
        "share": round(found / total, 4) if total else 1.0,
        "misses": misses[:50],
        "parser_message_passages": len(messages),
        "parser_message_ids": messages[:20],
        "markup_debris_passages": len(debris),
        "markup_debris_ids": debris[:20],
        "skipped": [list(s) for s in corpus.skipped],
    }


def main(argv: list[str] | None = None) -> int:
    folders = argv if argv is not None else sys.argv[1:]
    if not folders:
        print("usage: python -m rag.data.fidelity DIR [DIR ...]", file=sys.stderr)
        return 2
    for folder in folders:
        print(json.dumps(fidelity(folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
