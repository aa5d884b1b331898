"""HTML to titled text blocks in one pass, in time linear in the input.

The standard library's `html.parser.HTMLParser` reports tags and text as a stream; this reader keeps counters (not a
tree), so deeply nested markup (`<div><p>x</p>` repeated 10,000 times) costs what its bytes cost. The input is fed
in chunks, with the budget's deadline and character bound checked between them; a `<` with no `>` anywhere after
it is text (as HTMLParser would end up reading it), written as `&lt;` first, since the parser rescans the rest of
the input from each such `<` (`<a =` repeated is quadratic).

- Scripts, styles, navigation, headers, footers, forms and the like are dropped with everything inside them.
- The text inside <main> is kept (else inside <article>, else all of it), split into blocks at block-level tags;
  h1..h6 give the heading path, <pre> is a code block with its line breaks.
- Text nodes are joined as written: `Initial<wbr>ize` and `<b>Multi</b>Dataset` stay one word; a block-level tag
  or <br> separates words (<br> within the block).
"""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from rag.data.budget import Budget, unbounded

DROP = {"script", "style", "noscript", "nav", "header", "footer", "aside", "form", "template", "svg", "button"}
HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
BREAKS = {
    "p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption", "div", "section", "table",
    "tr", "ul", "ol", "dl", "main", "article", "body", "figure", "details", "summary", "hr", "tbody", "thead",
    "h1", "h2", "h3", "h4", "h5", "h6", "title", "address", "center", "fieldset", "legend", "option",
}  # fmt: skip
VOID = {"br", "hr", "img", "input", "meta", "link", "wbr", "area", "base", "col", "embed", "source", "track"}
CHUNK = 64 * 1024


@dataclass
class Piece:
    kind: str  # text | code | heading
    text: str
    level: int = 0  # headings: 1..6
    scope: int = 0  # 2 inside <main>, 1 inside <article>, 0 elsewhere


class StreamingText(HTMLParser):
    def __init__(self, budget: Budget):
        super().__init__(convert_charrefs=True)
        self.budget = budget
        self.pieces: list[Piece] = []
        self.buffer: list[str] = []
        self.drop = self.pre = self.main = self.article = self.in_title = self.in_link = 0
        self.heading = 0  # the level of the open heading, 0 outside one
        self.title: list[str] = []
        self.link_chars = self.all_chars = 0

    def scope(self) -> int:
        return 2 if self.main else 1 if self.article else 0

    def flush(self) -> None:
        if self.pre:
            return
        raw = "".join(self.buffer)
        self.buffer = []
        text = " ".join(raw.split())
        if text:
            kind = "heading" if self.heading else "text"
            self.pieces.append(Piece(kind, text, self.heading, self.scope()))

    def handle_starttag(self, tag, attrs):
        if tag in DROP:
            if tag not in VOID:
                self.drop += 1
            return
        if self.drop:
            return
        if tag == "title":
            self.in_title += 1
            return
        if tag == "a":
            self.in_link += 1
        if tag == "br":
            self.buffer.append("\n" if self.pre else " ")
        if tag in BREAKS and not self.pre:
            self.flush()
        if tag == "pre":
            self.pre += 1
        elif tag in HEADINGS:
            self.heading = int(tag[1])
        elif tag == "main":
            self.main += 1
        elif tag == "article":
            self.article += 1

    def handle_startendtag(self, tag, attrs):
        if self.drop:
            return
        if tag == "br":
            self.buffer.append("\n" if self.pre else " ")
        elif tag in BREAKS and not self.pre:
            self.flush()

    def handle_endtag(self, tag):
        if tag in DROP:
            self.drop = max(0, self.drop - 1)
            return
        if self.drop:
            return
        if tag == "title":
            self.in_title = max(0, self.in_title - 1)
            return
        if tag == "a":
            self.in_link = max(0, self.in_link - 1)
        if tag == "pre" and self.pre:
            self.pre -= 1
            if not self.pre:
                code = "".join(self.buffer).strip("\n")
                self.buffer = []
                if code.strip():
                    self.pieces.append(Piece("code", code, 0, self.scope()))
            return
        if tag in BREAKS and not self.pre:
            self.flush()
        if tag in HEADINGS:
            self.heading = 0
        elif tag == "main":
            self.main = max(0, self.main - 1)
        elif tag == "article":
            self.article = max(0, self.article - 1)

    def handle_data(self, data):
        if self.drop:
            return
        if self.in_title:
            self.title.append(data)
            return
        self.budget.charge(len(data))
        self.all_chars += len(data.strip())
        if self.in_link:
            self.link_chars += len(data.strip())
        self.buffer.append(data)


def read_html(text: str, budget: Budget | None = None) -> tuple[str, list[Piece], bool]:
    """(the <title>, the kept pieces, whether all the text sat inside links) of an HTML text."""
    parser = StreamingText(budget or unbounded())
    last = text.rfind(">")
    if "<" in text[last + 1 :]:  # '<' with no '>' after it is text; HTMLParser rescans from each one (quadratic)
        text = text[: last + 1] + text[last + 1 :].replace("<", "&lt;")
    for start in range(0, len(text), CHUNK):
        parser.feed(text[start : start + CHUNK])
        parser.budget.check_time()
    parser.close()
    if parser.pre:  # an unclosed <pre> runs to the end
        parser.pre = 1
        parser.handle_endtag("pre")
    parser.flush()
    scope = max((p.scope for p in parser.pieces), default=0)
    pieces = [p for p in parser.pieces if p.scope >= scope]
    only_links = parser.all_chars > 0 and parser.link_chars >= parser.all_chars
    return " ".join("".join(parser.title).split()), pieces, only_links


def html_fragment_text(html: str, budget: Budget | None = None) -> str:
    """The text of an HTML fragment (a block inside Markdown, a reST `raw:: html`); "" for badges and link rows
    (all the text inside links)."""
    _, pieces, only_links = read_html(html, budget)
    if only_links:
        return ""
    return "\n\n".join(p.text for p in pieces)
