"""mkdocs Markdown extensions rewritten as plain Markdown, line by line, before markdown-it reads the page.

CommonMark reads the content of an admonition or a tab (indented four spaces) as an indented code block, and a
`/// tip` block as a paragraph holding "/// tip". Python-Markdown's extensions give these a meaning; this pass
writes the same meaning as CommonMark:

- Indented containers: admonitions `!!! note "Title"`, collapsible `??? tip` / `???+ tip` (pymdownx.details) and
  content tabs `=== "Tab"` (pymdownx.tabbed). The marker line becomes the title as its own paragraph (the type,
  capitalised, where there is no title; nothing for `""`), and the content is dedented four spaces, so it reads as
  text (an indented code block inside stays code). Nesting works the same at each level, without recursion.
- pymdownx blocks: `/// tip | Title` … `///` (three or more slashes, closed by the same count). The header becomes
  the title paragraph, the option lines right under it (`    type: warning`) are dropped, the closing line too.
- Snippet includes, never read: `{* path hl[3] *}` (FastAPI's code includes), `{! path !}` and `{!> path !}`
  (markdown-include), `--8<-- "path"` (pymdownx.snippets) become a reference line `[included: path]`.

Fenced code is copied as it is (apart from include lines inside it, which become the reference).
"""

from __future__ import annotations

import re

INDENTED = re.compile(r"( *)(!!!|\?\?\?\+?|===\+?) +(.*?)\s*$")
ADMONITION_ARGS = re.compile(r'([\w-]+(?: +[\w-]+)*)?\s*(?:"(.*)")?')
BLOCK = re.compile(r"( *)(/{3,}) *([A-Za-z][\w-]*)? *(?:\| *(.*?))?\s*$")
BLOCK_OPTION = re.compile(r" +[\w-]+: ")
FENCE = re.compile(r" *(`{3,}|~{3,})")
INCLUDES = [
    re.compile(r"\{\*\s*(\S+?)(?:\s[^*]*)?\s*\*\}"),  # {* ../../docs_src/app.py hl[3] *}
    re.compile(r"\{!>?\s*(\S+?)\s*!\}"),  # {! file.md !}, {!> ../../docs_src/app.py !}
    re.compile(r"""-{1,2}8<-{1,2}\s*["']([^"']+)["']"""),  # --8<-- "file.md"
]


def reference(match: re.Match) -> str:
    return f"[included: {match.group(1)}]"


def with_references(line: str) -> str:
    if "{" in line or "8<" in line:
        for pattern in INCLUDES:
            line = pattern.sub(reference, line)
    return line


def container_title(marker: str, args: str) -> str:
    """The title an admonition, details block or tab shows."""
    if marker.startswith("="):
        return args.strip().strip('"')
    m = ADMONITION_ARGS.fullmatch(args.strip())
    if m is None:
        return args.strip()
    kinds, title = m.group(1) or "", m.group(2)
    if title is not None:
        return title
    return kinds.split()[0].replace("-", " ").capitalize() if kinds else ""


def block_title(name: str | None, title: str | None) -> str:
    """The title a pymdownx block shows: its title, else its type; an `html` block's argument is a selector."""
    if name == "html":
        return ""
    if title:
        return title
    if name and name != "tab":
        return name.replace("-", " ").capitalize()
    return ""


def plain_markdown(text: str) -> str:
    """The page with mkdocs containers, blocks and includes written as CommonMark (see the module docstring)."""
    out: list[str] = []
    indents: list[int] = []  # the content indent of each open indented container
    blocks: list[int] = []  # the slash count of each open pymdownx block
    fence = ""  # the open fence's marker, "" outside fenced code
    options = False  # right after a block header, where option lines may follow
    for line in text.splitlines():
        expanded = line.expandtabs(4)
        blank = not expanded.strip()
        if not blank and not fence:
            indent = len(expanded) - len(expanded.lstrip(" "))
            while indents and indent < indents[-1]:
                indents.pop()
        strip = indents[-1] if indents else 0
        body = "" if blank else expanded[strip:] if expanded[:strip].isspace() or not strip else expanded.lstrip()
        if fence:
            stripped = body.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                fence = ""
            out.append(with_references(body))
            continue
        if options:
            if BLOCK_OPTION.match(body):
                continue
            options = False
        if m := FENCE.match(body):
            fence = m.group(1)
            out.append(body)
            continue
        if m := INDENTED.fullmatch(body):
            lead, marker, args = len(m.group(1)), m.group(2), m.group(3)
            if title := container_title(marker, args):
                out += [" " * lead + title, ""]
            indents.append(strip + lead + 4)
            continue
        if m := BLOCK.fullmatch(body):
            lead, slashes, name, title = m.group(1), len(m.group(2)), m.group(3), m.group(4)
            if name:
                blocks.append(slashes)
                if shown := block_title(name, title):
                    out += [lead + shown, ""]
                options = True
                continue
            if blocks and slashes in blocks:
                while blocks and blocks.pop() != slashes:
                    pass
                out.append("")
                continue
        out.append(with_references(body))
    return "\n".join(out) + "\n"
