"""Reading a user's documents, each format through the library made for it, into titled blocks of text.

- markdown (.md, .markdown): markdown-it-py. Headings give the heading path; fenced and indented code stays one
  block and never yields a heading; YAML front matter becomes metadata (its `title` is the title); HTML blocks and
  inline tags are reduced to their text.
- HTML (.html, .htm): beautifulsoup4. Scripts, styles, navigation, headers, footers and forms are dropped; the
  text of <main> (or <article>, or <body>) is kept, split at h1..h6.
- PDF (.pdf): pypdf, one block per page with its page number.
- reStructuredText (.rst): docutils' parser; sections give the heading path.
- plain text (.txt): paragraphs.

`scan_folder` walks a folder and says what it will not read (unsupported extensions, symlinks leading outside the
folder); `read_document` raises `Unreadable` with one line for a file it cannot read (encrypted or corrupt PDF,
binary content, a file over the size limit). Chunking into passages is rag.data.corpus's job.
"""

from __future__ import annotations

import io
import logging
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    ".rst": "rst",
    ".txt": "text",
}
MAX_TEXT_BYTES = 10 * 2**20  # larger text files are skipped with a warning (a log or a data dump, not a document)
MAX_PDF_BYTES = 100 * 2**20
HTML_DROP = ["script", "style", "noscript", "nav", "header", "footer", "aside", "form", "template", "svg", "button"]
HTML_BLOCKS = ["p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption"]
HTML_HEADINGS = ["h1", "h2", "h3", "h4", "h5", "h6"]
_TAG = re.compile(r"</?[A-Za-z][^>]*>")


class Unreadable(Exception):
    """A file that cannot be read as its extension says; the message is the reason, one line."""


@dataclass
class Block:
    text: str
    headings: tuple[str, ...] = ()  # the heading path, outermost first
    kind: str = "text"  # text | code (code blocks are never split)
    page: int | None = None  # PDFs: the 1-based page number


@dataclass
class Document:
    title: str
    blocks: list[Block]
    metadata: dict = field(default_factory=dict)  # front matter, PDF info
    valid_utf8: bool = True


@dataclass
class Scan:
    """What a folder holds: the files to read, files refused with a reason, and unsupported extensions counted."""

    files: list[Path] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, reason)
    unsupported: Counter = field(default_factory=Counter)  # extension -> files


def decode_utf8(raw: bytes) -> tuple[str, bool]:
    """Decode UTF-8; return (text, was_valid). Invalid bytes become U+FFFD."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), False


# ---------------------------------------------------------------- the folder


def scan_folder(folder: Path) -> Scan:
    """Every supported file under folder (sorted, hidden files and folders left out), and what was refused."""
    root, scan = folder.resolve(), Scan()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for d in dirnames:  # os.walk does not enter symlinked folders; say so when one leads elsewhere
            if (here / d).is_symlink() and not (here / d).resolve().is_relative_to(root):
                scan.skipped.append(
                    (
                        (here / d).relative_to(folder).as_posix(),
                        f"symlink leading outside the folder (to {(here / d).resolve()})",
                    )
                )
        for name in sorted(filenames):
            path = here / name
            if name.startswith("."):
                continue
            rel = path.relative_to(folder).as_posix()
            kind = not_regular(path)
            if kind:  # a FIFO blocks the reader forever, a device never ends: neither is a document
                scan.skipped.append((rel, f"not a regular file ({kind}); skipped"))
                continue
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    scan.skipped.append((rel, f"symlink leading outside the folder (to {target})"))
                    continue
                if not target.is_file():
                    scan.skipped.append((rel, "broken symlink"))
                    continue
            ext = path.suffix.lower()
            if ext in FORMATS:
                scan.files.append(path)
            else:
                scan.unsupported[ext or "(no extension)"] += 1
    return scan


FILE_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


def not_regular(path: Path) -> str | None:
    """What the path is when it is not a regular file ('a FIFO', 'a character device', ...), else None. Follows a
    symlink to its target; a path that cannot be stat'ed is left to the reader to report."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    return None if stat.S_ISREG(mode) else FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")


def read_bounded(path: Path, limit: int, fmt: str) -> bytes:
    """The file's bytes, at most `limit`: opened without blocking (a FIFO swapped in after the scan cannot stall the
    open), checked to be a regular file on the open descriptor (no race with the scan), read with a byte bound."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"not a regular file ({FILE_KINDS.get(stat.S_IFMT(info.st_mode), 'unknown kind')})")
        if info.st_size > limit:
            raise Unreadable(f"{info.st_size / 2**20:.0f} MB is over the {limit // 2**20} MB limit for {fmt} files")
        raw = f.read(limit + 1)
    if len(raw) > limit:  # the file grew after the stat
        raise Unreadable(f"over the {limit // 2**20} MB limit for {fmt} files")
    return raw


def read_document(path: Path) -> Document:
    """Parse one file by its extension, or raise Unreadable with the reason. Only regular files are read, and never
    more than the format's byte limit."""
    fmt = FORMATS[path.suffix.lower()]
    limit = MAX_PDF_BYTES if fmt == "pdf" else MAX_TEXT_BYTES
    raw = read_bounded(path, limit, fmt)
    if fmt == "pdf":
        doc = parse_pdf(io.BytesIO(raw))
    else:
        if b"\0" in raw[:8192]:
            raise Unreadable(f"binary content (NUL bytes) in a .{path.suffix.lstrip('.')} file")
        text, ok = decode_utf8(raw)
        parse = {"markdown": parse_markdown, "html": parse_html, "rst": parse_rst, "text": parse_text}[fmt]
        try:
            doc = parse(text)
        except Exception as e:  # a third-party parser on an untrusted file: any failure means "cannot read it"
            raise Unreadable(f"cannot parse as {fmt} ({type(e).__name__}: {str(e)[:120]})") from e
        doc.valid_utf8 = ok
    doc.title = doc.title or path.stem.replace("-", " ").replace("_", " ")
    return doc


# ---------------------------------------------------------------- formats


def html_text(html: str) -> str:
    """The text of an HTML block inside markdown; "" for badges and link rows (text only inside links)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    text = " ".join(soup.get_text(" ").split())
    links = " ".join(" ".join(a.get_text(" ").split()) for a in soup.find_all("a"))
    return "" if text == links or text == " ".join(links.split()) else text


def parse_markdown(text: str) -> Document:
    """markdown-it-py tokens → blocks under their heading path (see the module docstring)."""
    import yaml
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    tokens = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).parse(text)
    lines = text.splitlines()
    metadata: dict = {}
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []  # (level, heading)
    first_h1 = ""
    i = 0
    while i < len(tokens):
        t = tokens[i]
        headings = tuple(h for _, h in path)
        if t.type == "front_matter":
            try:
                loaded = yaml.safe_load(t.content)
            except yaml.YAMLError:
                loaded = None
            metadata = loaded if isinstance(loaded, dict) else {}
        elif t.type == "heading_open":
            level, heading = int(t.tag[1]), " ".join(_TAG.sub("", tokens[i + 1].content).split())
            path = [(lv, h) for lv, h in path if lv < level] + [(level, heading)]
            first_h1 = first_h1 or (heading if level == 1 else "")
            i += 3
            continue
        elif t.type in ("fence", "code_block"):
            fence = "```" if "```" not in t.content else "~~~~"
            blocks.append(Block(f"{fence}{t.info.strip()}\n{t.content.rstrip()}\n{fence}", headings, "code"))
        elif t.type == "html_block":
            if stripped := html_text(t.content):
                blocks.append(Block(stripped, headings))
        elif t.level == 0 and t.nesting == 1 and t.map:  # a paragraph, list, quote or table: its source lines
            j = i + 1
            inline_html = []
            while j < len(tokens) and not (tokens[j].level == 0 and tokens[j].nesting == -1):
                for child in tokens[j].children or []:
                    if child.type == "html_inline":
                        inline_html.append(child.content)
                j += 1
            source = "\n".join(line.strip() for line in lines[t.map[0] : t.map[1]])
            for tag in inline_html:
                source = source.replace(tag, "")
            if source.strip():
                blocks.append(Block(source.strip(), headings))
            i = j + 1
            continue
        i += 1
    title = str(metadata.get("title") or first_h1 or "")
    return Document(" ".join(title.split()), blocks, {k: _plain(v) for k, v in metadata.items()})


def _plain(value):
    """Front-matter values as JSON-friendly data (dates become strings)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def parse_html(text: str) -> Document:
    """beautifulsoup4: the main text, split at headings; boilerplate elements dropped."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(HTML_DROP):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    first_h1 = ""
    for el in root.find_all(HTML_HEADINGS + HTML_BLOCKS):
        if el.name in HTML_HEADINGS:
            level, heading = int(el.name[1]), " ".join(el.get_text(" ").split())
            path = [(lv, h) for lv, h in path if lv < level] + [(level, heading)]
            first_h1 = first_h1 or (heading if level == 1 else "")
        elif el.find_parent(HTML_BLOCKS) is None:  # the outermost block only, so no text is counted twice
            headings = tuple(h for _, h in path)
            if el.name == "pre":
                blocks.append(Block(f"```\n{el.get_text().strip()}\n```", headings, "code"))
            elif words := inline_text(el):
                blocks.append(Block(words, headings))
    if not blocks and (loose := " ".join(root.get_text(" ").split())):
        blocks.append(Block(loose))
    return Document(title or first_h1, blocks)


SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?)\]}])")


def inline_text(el) -> str:
    """A block's text with inline elements joined by spaces (so `a<br>b` stays two words), without the space that
    joining puts before punctuation after an inline element (`<code>run()</code>.` reads `run().`)."""
    return SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(el.get_text(" ").split()))


def code_fence(code: str, language: str = "") -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def parse_rst(text: str) -> Document:
    """docutils' reStructuredText parser; sections give the heading path, literal blocks are code."""
    from docutils import nodes
    from docutils.core import publish_doctree
    from docutils.parsers.rst import directives
    from docutils.parsers.rst.directives.body import CodeBlock

    directives.register_directive("code-block", CodeBlock)  # Sphinx's name for docutils' `code`
    directives.register_directive("sourcecode", CodeBlock)
    tree = publish_doctree(
        text,
        settings_overrides={
            "report_level": 5,
            "halt_level": 5,
            "warning_stream": io.StringIO(),
            "doctitle_xform": False,
            "file_insertion_enabled": False,
            "raw_enabled": False,
        },
    )
    blocks: list[Block] = []

    def walk(node, headings: tuple[str, ...]) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                walk(child, headings + (" ".join(child[0].astext().split()),))
            elif isinstance(
                child, (nodes.title, nodes.system_message, nodes.comment, nodes.substitution_definition, nodes.target)
            ):
                continue
            elif isinstance(child, nodes.literal_block):  # code-block python: classes ['code', 'python']
                language = next((c for c in child.get("classes", []) if c != "code"), "")
                blocks.append(Block(code_fence(child.astext(), language), headings, "code"))
            elif stripped := child.astext().strip():
                blocks.append(Block(stripped, headings))

    walk(tree, ())
    sections = list(tree.findall(nodes.section))
    title = " ".join(sections[0][0].astext().split()) if sections else ""
    return Document(title, blocks)


def parse_text(text: str) -> Document:
    return Document("", [Block(p.strip()) for p in re.split(r"\n\s*\n", text) if p.strip()])


def pdf_title(reader) -> str:
    """The document information's /Title, else the XMP metadata's dc:title (where many producers put it)."""
    info = reader.metadata or {}
    title = " ".join(str(info.get("/Title") or "").split())
    if not title:
        try:
            xmp = reader.xmp_metadata
            titles = (xmp.dc_title or {}) if xmp is not None else {}
        except Exception:  # a malformed XMP packet is no title, not an unreadable PDF
            titles = {}
        title = " ".join(str(titles.get("x-default") or next(iter(titles.values()), "")).split())
    return title


def heading_line(line: str) -> bool:
    """A line that reads as a heading: short, and not the end of a sentence."""
    line = line.strip()
    return 0 < len(line) <= 80 and len(line.split()) <= 10 and not line.endswith((".", ",", ";", ":", "?", "!"))


def pdf_page_blocks(text: str, page: int) -> list[Block]:
    """A page's paragraphs. A heading-like first line above more text becomes the heading of the page's blocks,
    so it is not glued to the first sentence ("Pulley Basics Pulleys lift ...")."""
    lines = text.strip().splitlines()
    headings: tuple[str, ...] = ()
    if len(lines) > 1 and heading_line(lines[0]) and lines[1].strip():
        headings, text = (" ".join(lines[0].split()),), "\n".join(lines[1:])
    return [Block(p.strip(), headings, page=page) for p in re.split(r"\n\s*\n", text) if p.strip()]


def parse_pdf(path) -> Document:
    """pypdf: the text of each page. Encrypted (without an empty password) and corrupt files are Unreadable."""
    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf logs every repaired xref table
    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted PDF (it needs a password)")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = pdf_title(reader)
    except Unreadable:
        raise
    except Exception as e:  # pypdf raises many kinds on a damaged file; each means "cannot read this one"
        name = type(e).__name__
        if "Decrypt" in name or "Password" in name or "crypt" in str(e).lower():
            raise Unreadable("encrypted PDF (it needs a password)") from e
        raise Unreadable(f"not a readable PDF ({name}: {str(e)[:120]})") from e
    blocks = [block for n, text in enumerate(pages, 1) for block in pdf_page_blocks(text, n)]
    if not blocks:
        raise Unreadable("the PDF has no extractable text (scanned images need OCR, which rag does not do)")
    return Document(title, blocks, {"pages": len(pages)})
