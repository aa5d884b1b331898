"""Reading a user's documents, each format through the library made for it, into titled blocks of text.

- markdown (.md, .markdown): markdown-it-py, after rag.data.mkdocs has written mkdocs' admonitions, tabs, blocks
  and snippet includes as CommonMark. Headings give the heading path; fenced and indented code stays one block and
  never yields a heading; YAML front matter (PyYAML's safe loader, aliases bounded) becomes metadata (its `title`
  is the title); HTML blocks and inline tags are reduced to their text.
- HTML (.html, .htm): rag.data.html_text, one linear pass of the standard library's HTMLParser. Scripts, styles,
  navigation, headers, footers and forms are dropped; the text of <main> (or <article>, or <body>) is kept, split
  at h1..h6.
- PDF (.pdf): pypdf, one block per page with its page number; a page whose content stream decodes past the
  file's budget (at most PDF_STREAM_BYTES) is left out (and named in the document's notes).
- reStructuredText (.rst): docutils' parser with Sphinx's roles and directives (rag.data.rst); sections give the
  heading path.
- plain text (.txt): paragraphs.

Every file is read under a rag.data.budget.Budget made from its size. `scan_folder` walks a folder and says what it
will not read (unsupported extensions, symlinks leading outside the folder or in a loop); `read_document` opens the
file and checks the opened descriptor's real path against the folder (a file swapped for a symlink after the scan
is refused), and raises `Unreadable` with one line for a file it cannot read (encrypted or corrupt PDF, binary
content, a file over the size limit or past its budget). Chunking into passages is rag.data.corpus's job.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rag.data.budget import PDF_STREAM_BYTES, Budget, Unreadable, load_front_matter, unbounded
from rag.data.html_text import html_fragment_text, read_html
from rag.data.mkdocs import plain_markdown

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
FRONT_MATTER_NODES = 10_000  # values kept from front matter (a title, tags, a date: a few dozen in real pages)
_TAG = re.compile(r"</?[A-Za-z][^>]*>")
ATTR_LIST = re.compile(r"\s*\{:?\s*[#.][^{}]*\}\s*$")  # mkdocs' attr_list after a heading: `## Title { #anchor }`


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
    notes: list[str] = field(default_factory=list)  # what was left out of a file that was read (one line each)
    mtime: float | None = None  # the opened file's modification time
    size: int = 0  # the file's bytes


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


def real_path(path: Path) -> tuple[Path | None, str]:
    """(the path with every symlink resolved, "") or (None, why: 'symlink loop', 'broken symlink')."""
    try:
        return Path(os.path.realpath(path, strict=True)), ""
    except OSError as e:
        return None, "symlink loop" if e.errno == errno.ELOOP else "broken symlink"
    except RuntimeError:  # pathlib's own loop detection
        return None, "symlink loop"


def scan_folder(folder: Path) -> Scan:
    """Every supported file under folder (sorted, hidden files and folders left out), and what was refused."""
    root, scan = folder.resolve(), Scan()
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for d in dirnames:  # os.walk does not enter symlinked folders; say so when one leads elsewhere
            if (here / d).is_symlink():
                target, _ = real_path(here / d)
                if target is not None and not target.is_relative_to(root):
                    scan.skipped.append(
                        ((here / d).relative_to(folder).as_posix(), f"symlink leading outside the folder (to {target})")
                    )
        for name in sorted(filenames):
            path = here / name
            if name.startswith("."):
                continue
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                target, why = real_path(path)
                if target is None:  # a loop (a -> a, a -> b -> a) or a dangling link
                    scan.skipped.append((rel, f"{why}; skipped"))
                    continue
                if not target.is_relative_to(root):
                    scan.skipped.append((rel, f"symlink leading outside the folder (to {target})"))
                    continue
            kind = not_regular(path)
            if kind:  # a FIFO blocks the reader forever, a device never ends: neither is a document
                scan.skipped.append((rel, f"not a regular file ({kind}); skipped"))
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


def descriptor_path(fd: int) -> Path | None:
    """The real path of an open file descriptor, from the kernel (Linux /proc, macOS F_GETPATH); None elsewhere."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    try:
        import fcntl

        if hasattr(fcntl, "F_GETPATH"):
            return Path(os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024)).rstrip(b"\0")))
    except OSError:
        pass
    return None


def read_bounded(path: Path, limit: int, fmt: str, root: Path | None = None) -> tuple[bytes, os.stat_result]:
    """The file's bytes (at most `limit`) and its stat. Opened without blocking (a FIFO swapped in after the scan
    cannot stall the open); with `root`, the opened descriptor's real path must lie inside it (a file swapped for a
    symlink after the scan is refused; where the kernel cannot say, symlinks are not followed at all). Checked to be
    a regular file on the descriptor and read with a byte bound."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    if root is not None:
        opened = descriptor_path(fd)
        if opened is None:  # the kernel cannot say where the descriptor leads: refuse symlinks altogether
            os.close(fd)
            fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
        elif not opened.is_relative_to(root):
            os.close(fd)
            raise Unreadable("symlink leading outside the folder (the file was replaced after the scan); skipped")
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(f"not a regular file ({FILE_KINDS.get(stat.S_IFMT(info.st_mode), 'unknown kind')})")
        if info.st_size > limit:
            raise Unreadable(f"{info.st_size / 2**20:.0f} MB is over the {limit // 2**20} MB limit for {fmt} files")
        raw = f.read(limit + 1)
    if len(raw) > limit:  # the file grew after the stat
        raise Unreadable(f"over the {limit // 2**20} MB limit for {fmt} files")
    return raw, info


def read_document(path: Path, root: Path | None = None) -> Document:
    """Parse one file by its extension under a budget made from its size, or raise Unreadable with the reason. Only
    regular files are read, never more than the format's byte limit, and (with `root`, the folder's resolved path)
    only files whose opened descriptor lies inside the folder."""
    raw, info = read_file(path, root)
    return parse_document(path, raw, info)


def read_file(path: Path, root: Path | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes and stat of a supported file, read as read_document reads it (read_bounded with the format's
    limit); Unreadable with the reason."""
    fmt = FORMATS[path.suffix.lower()]
    limit = MAX_PDF_BYTES if fmt == "pdf" else MAX_TEXT_BYTES
    try:
        return read_bounded(path, limit, fmt, root)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Unreadable("symlink loop, or a symlink where the scan found a file; skipped") from None
        raise


def parse_document(path: Path, raw: bytes, info: os.stat_result) -> Document:
    """Parse a file's bytes (read_file) by its extension, under a budget made from their size."""
    fmt = FORMATS[path.suffix.lower()]
    budget = Budget.for_size(len(raw))
    if fmt == "pdf":
        doc = parse_pdf(io.BytesIO(raw), budget)
    else:
        if b"\0" in raw[:8192]:
            raise Unreadable(f"binary content (NUL bytes) in a .{path.suffix.lstrip('.')} file")
        text, ok = decode_utf8(raw)
        parse = {"markdown": parse_markdown, "html": parse_html, "rst": parse_rst, "text": parse_text}[fmt]
        try:
            doc = parse(text, budget)
        except Unreadable:
            raise
        except RecursionError:
            raise Unreadable(f"nested too deep to parse as {fmt}") from None
        except Exception as e:  # a third-party parser on an untrusted file: any failure means "cannot read it"
            raise Unreadable(f"cannot parse as {fmt} ({type(e).__name__}: {str(e)[:120]})") from e
        doc.valid_utf8 = ok
    charged = sum(len(b.text) for b in doc.blocks)
    if charged > budget.chars:
        raise Unreadable(
            f"over its budget: {charged:,} characters extracted from a {len(raw):,}-byte file (at most {budget.chars:,})"
        )
    doc.title = doc.title or path.stem.replace("-", " ").replace("_", " ")
    doc.mtime, doc.size = info.st_mtime, len(raw)
    return doc


# ---------------------------------------------------------------- formats


def html_text(html: str) -> str:
    """The text of an HTML block inside markdown; "" for badges and link rows (text only inside links)."""
    return " ".join(html_fragment_text(html).split())


def parse_markdown(text: str, budget: Budget | None = None) -> Document:
    """markdown-it-py tokens → blocks under their heading path (see the module docstring)."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    budget = budget or unbounded()
    text = plain_markdown(text)
    tokens = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).parse(text)
    budget.check_time()
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
            loaded = load_front_matter(t.content)
            metadata = plain_metadata(loaded) if isinstance(loaded, dict) else {}
        elif t.type == "heading_open":
            level = int(t.tag[1])
            heading = " ".join(ATTR_LIST.sub("", _TAG.sub("", tokens[i + 1].content)).split())
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
    return Document(" ".join(title.split()), blocks, metadata)


def plain_metadata(loaded: dict) -> dict:
    """Front-matter values as JSON-friendly data (dates become strings), at most FRONT_MATTER_NODES values (aliases
    let a small mapping name one list many times; each copy counts)."""
    count = 0

    def plain(value):
        nonlocal count
        count += 1
        if count > FRONT_MATTER_NODES:
            raise Unreadable(f"over its budget: front matter with more than {FRONT_MATTER_NODES:,} values")
        if isinstance(value, (str, int, float, bool)) or value is None:
            return value
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        return str(value)

    return {str(k): plain(v) for k, v in loaded.items()}


def parse_html(text: str, budget: Budget | None = None) -> Document:
    """The main text, split at headings; boilerplate elements dropped (rag.data.html_text, linear time)."""
    title, pieces, _ = read_html(text, budget)
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    first_h1 = ""
    for piece in pieces:
        if piece.kind == "heading":
            path = [(lv, h) for lv, h in path if lv < piece.level] + [(piece.level, piece.text)]
            first_h1 = first_h1 or (piece.text if piece.level == 1 else "")
        elif piece.kind == "code":
            blocks.append(Block(code_fence(piece.text), tuple(h for _, h in path), "code"))
        else:
            blocks.append(Block(SPACE_BEFORE_PUNCTUATION.sub(r"\1", piece.text), tuple(h for _, h in path)))
    return Document(title or first_h1, blocks)


SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?)\]}])")


def code_fence(code: str, language: str = "") -> str:
    return f"```{language}\n{code.rstrip()}\n```"


def parse_rst(text: str, budget: Budget | None = None) -> Document:
    """docutils' reStructuredText parser with Sphinx's roles and directives (rag.data.rst); sections give the
    heading path, literal and doctest blocks are code, admonitions lead with their kind ("Note: …")."""
    from docutils import nodes

    from rag.data.rst import parse_tree

    tree = parse_tree(text, budget)
    skip = (nodes.system_message, nodes.comment, nodes.substitution_definition, nodes.target, nodes.raw)
    blocks: list[Block] = []

    def node_text(node) -> str:
        """The text of a node as astext() gives it, leaving out parser messages, comments and targets."""
        if isinstance(node, nodes.Text):
            return node.astext()
        if isinstance(node, skip):
            return ""
        if isinstance(node, nodes.problematic):  # markup docutils could not resolve: its words, not the markup
            return UNRESOLVED.sub(lambda m: m.group(1) or m.group(2), node.astext())
        separator = "" if isinstance(node, nodes.TextElement) else "\n\n"
        return separator.join(t for child in node.children if (t := node_text(child)))

    def walk(node, headings: tuple[str, ...], out: list[Block]) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                walk(child, headings + (" ".join(child[0].astext().split()),), out)
            elif isinstance(child, (nodes.title, *skip)):
                continue
            elif isinstance(child, (nodes.literal_block, nodes.doctest_block)):  # classes ['code', 'python']
                language = next((c for c in child.get("classes", []) if c != "code"), "")
                out.append(Block(code_fence(child.astext(), language), headings, "code"))
            elif isinstance(child, nodes.Admonition):
                first = child[0] if len(child) else None
                label = " ".join(first.astext().split()) if isinstance(first, nodes.title) else child.tagname
                inner: list[Block] = []
                walk(child, headings, inner)
                lead = next((b for b in inner if b.kind == "text"), None)
                if lead is None:
                    inner.insert(0, Block(label.capitalize(), headings))
                else:
                    lead.text = f"{label[:1].upper()}{label[1:]}: {lead.text}"
                out += inner
            elif isinstance(child, (nodes.container, nodes.compound, nodes.topic, nodes.sidebar)):
                walk(child, headings, out)
            elif stripped := node_text(child).strip():
                out.append(Block(stripped, headings))

    walk(tree, (), blocks)
    sections = list(tree.findall(nodes.section))
    title = " ".join(sections[0][0].astext().split()) if sections else ""
    return Document(title, blocks)


UNRESOLVED = re.compile(r"(?::[\w.:+-]+:)?`([^`]*?)(?:\s*<[^<>]*>)?`_{0,2}|(\S+?)_{1,2}\b")


def parse_text(text: str, budget: Budget | None = None) -> Document:
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


def stream_limit(budget: Budget) -> int:
    """The decoded bytes one page's content stream may have: the file's character budget (text cannot outgrow the
    operators that draw it), at least 1 MB, at most PDF_STREAM_BYTES."""
    return min(PDF_STREAM_BYTES, max(2**20, budget.chars))


def page_text(page, number: int, budget: Budget, left_out: list[int]) -> str:
    """One page's text, charged to the budget; "" (and the page number in left_out) when its content stream decodes
    past stream_limit (pypdf's extraction takes about a second per 2 MB)."""
    contents = page.get_contents()
    size = len(contents.get_data()) if contents is not None else 0
    if size > stream_limit(budget):
        left_out.append(number)
        return ""
    text = page.extract_text() or ""
    budget.charge(len(text))
    return text


def parse_pdf(path, budget: Budget | None = None) -> Document:
    """pypdf: the text of each page, under the budget (pypdf's own decoding limits lowered to PDF_STREAM_BYTES).
    Encrypted (without an empty password) and corrupt files are Unreadable."""
    from pypdf import PdfReader, apply_configuration

    budget = budget or unbounded()
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf logs every repaired xref table
    left_out: list[int] = []
    try:
        with apply_configuration(zlib_maximum_output_length=4 * PDF_STREAM_BYTES):
            reader = PdfReader(path)
            if reader.is_encrypted and not reader.decrypt(""):
                raise Unreadable("encrypted PDF (it needs a password)")
            pages = [page_text(page, n, budget, left_out) for n, page in enumerate(reader.pages, 1)]
            title = pdf_title(reader)
    except Unreadable:
        raise
    except Exception as e:  # pypdf raises many kinds on a damaged file; each means "cannot read this one"
        name = type(e).__name__
        if "Decrypt" in name or "Password" in name or "crypt" in str(e).lower():
            raise Unreadable("encrypted PDF (it needs a password)") from e
        raise Unreadable(f"not a readable PDF ({name}: {str(e)[:120]})") from e
    blocks = [block for n, text in enumerate(pages, 1) for block in pdf_page_blocks(text, n)]
    notes = []
    if left_out:
        shown = ", ".join(map(str, left_out[:10])) + (" …" if len(left_out) > 10 else "")
        notes.append(f"page(s) {shown} left out: content stream over {stream_limit(budget) / 2**20:.1f} MB each")
    if not blocks:
        if left_out:
            raise Unreadable(f"over its budget: {notes[0]}, no other text")
        raise Unreadable("the PDF has no extractable text (scanned images need OCR, which rag does not do)")
    return Document(title, blocks, {"pages": len(pages)}, notes=notes)
