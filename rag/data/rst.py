"""reStructuredText as Sphinx writes it, through docutils' own parser, into titled text blocks.

docutils knows the reST core; a Sphinx page also uses Sphinx's roles and directives, which plain docutils reports
as errors (and whose text it drops). Before parsing, every role and directive name the page uses that docutils
does not know is registered with docutils' own API:

- roles render as their text, as Sphinx shows them: `:class:`~a.B`` → `B`, `:meth:`x.y`` → `x.y`,
  `:ref:`title <label>`` → `title`, `!x` → `x`; any unknown role → its text.
- `code-block` / `sourcecode` / `code` (with Sphinx's options) are code; `literalinclude` and `include` are a
  reference line `[included: path]` (never read); `raw:: html` is its text (other raw formats are dropped);
  `versionadded` / `versionchanged` / `deprecated` read "New in version 2.0: …" as Sphinx prints them; diagram
  directives (`mermaid`, `graphviz`, …) keep their source as code; navigation (`toctree`, `index`, `highlight`,
  `currentmodule`, …) is dropped; conditions and layouts (`only`, `grid`, `tab-set`, …) keep their content only;
  any other directive (`tab`, `tab-set`, `autoclass`, `seealso`, …) keeps its
  argument as a line and its content parsed as reST.
- Parser messages never become text: `report_level`/`halt_level` 5 with a private `warning_stream`, and
  `system_message` nodes are left out wherever they sit in the tree.
- Substitutions are expanded only when the expansion fits the file's budget: the sizes are computed from the parsed
  (not yet transformed) tree first, so `|s0|` doubling over 24 levels is refused before docutils copies anything.
"""

from __future__ import annotations

import io
import re

from rag.data.budget import Budget, Unreadable, unbounded

ROLE_NAME = re.compile(r"(?<![\w\\`]):((?:[A-Za-z0-9][\w.+-]*)(?::[A-Za-z0-9][\w.+-]*)*):`")
DIRECTIVE_NAME = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w.+:-]*)[ \t]*::", re.M)
EXPLICIT_TITLE = re.compile(r"^(.+?)\s*<([^<>]*)>$", re.S)
CODE_DIRECTIVES = {"code-block", "sourcecode", "code"}
INCLUDE_DIRECTIVES = {"literalinclude", "include"}
VERSION_DIRECTIVES = {
    "versionadded": "New in version",
    "versionchanged": "Changed in version",
    "deprecated": "Deprecated since version",
    "versionremoved": "Removed in version",
}
DIAGRAM_DIRECTIVES = {"mermaid", "graphviz", "graph", "digraph", "plantuml", "uml", "inheritance-diagram"}
NAVIGATION_DIRECTIVES = {
    "toctree", "index", "highlight", "currentmodule", "module", "py:module", "py:currentmodule", "sectionauthor",
    "moduleauthor", "codeauthor", "tabularcolumns", "default-role", "default-domain", "autosummary", "meta",
}  # fmt: skip
LAYOUT_DIRECTIVES = {"only", "ifconfig", "grid", "grid-item", "tab-set", "tabs", "hlist", "cssclass", "rst-class"}
SETTINGS = {
    "report_level": 5,
    "halt_level": 5,
    "doctitle_xform": False,
    "file_insertion_enabled": False,
    "raw_enabled": False,
    "syntax_highlight": "none",
    "smart_quotes": False,
    "line_length_limit": 100_000,
}


def role_text(text: str) -> str:
    """What Sphinx shows for a role's content: the explicit title, else the target (`~` keeps its last part)."""
    if m := EXPLICIT_TITLE.match(text):
        return " ".join(m.group(1).split())
    text = text.strip().lstrip("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    return text


def text_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """Any role docutils does not know: its text, as a literal (Sphinx roles name code: classes, methods, options)."""
    from docutils import nodes, utils

    return [nodes.literal(rawtext, role_text(utils.unescape(text)))], []


def directive_classes():
    """The directive classes, made on first use (docutils is imported only when a .rst file is read)."""
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class AnyOptions(dict):
        """An option spec that accepts every option, as text (Sphinx's options are many and extensible)."""

        def __missing__(self, key):
            return directives.unchanged

    class Generic(Directive):
        """An unknown directive: its argument as a line, its content parsed as reST."""

        optional_arguments = 1
        final_argument_whitespace = True
        has_content = True
        option_spec = AnyOptions(name=directives.unchanged)

        def run(self):
            box = nodes.container()
            if self.arguments and self.arguments[0].strip():
                box += nodes.paragraph(text=" ".join(self.arguments[0].split()))
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class Version(Generic):
        def run(self):
            words = (self.arguments[0] if self.arguments else "").split(None, 1)
            box = nodes.container()
            lead = f"{VERSION_DIRECTIVES[self.name.lower()]} {words[0] if words else ''}".strip()
            box += nodes.paragraph(text=f"{lead}: {' '.join(words[1].split())}" if len(words) > 1 else f"{lead}.")
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class Code(Generic):
        def run(self):
            language = (self.arguments[0].split() or [""])[0] if self.arguments else ""
            node = nodes.literal_block("\n".join(self.content), "\n".join(self.content))
            node["classes"] = ["code"] + ([language] if language else [])
            return [node]

    class Diagram(Generic):
        def run(self):
            source = "\n".join(self.content) or (self.arguments[0] if self.arguments else "")
            node = nodes.literal_block(source, source)
            node["classes"] = ["code", self.name]
            return [node] if source.strip() else []

    class Include(Generic):
        def run(self):
            path = " ".join(self.arguments[0].split()) if self.arguments else ""
            return [nodes.paragraph(text=f"[included: {path}]")] if path else []

    class Raw(Generic):
        def run(self):
            from rag.data.html_text import html_fragment_text

            formats = (self.arguments[0] if self.arguments else "").lower().split()
            if "html" not in formats or not self.content:
                return []
            text = html_fragment_text("\n".join(self.content))
            return [nodes.paragraph(text=part) for part in text.split("\n\n") if part.strip()]

    class Layout(Generic):
        """A directive whose argument is a condition or a layout (`only:: html`, `grid:: 1 2 2 2`): content only."""

        def run(self):
            box = nodes.container()
            if self.content:
                self.state.nested_parse(self.content, self.content_offset, box)
            return [box]

    class Nothing(Generic):
        def run(self):
            return []

    return Generic, Version, Code, Diagram, Include, Raw, Layout, Nothing


def register(text: str) -> None:
    """Register a handler for every role and directive `text` uses that docutils has no meaning for (and for the
    Sphinx directives whose docutils meaning differs: code, include, raw)."""
    from docutils import utils
    from docutils.parsers.rst import directives, languages, roles

    english = languages.get_language("en")
    reporter = utils.Reporter("", 5, 5, stream=io.StringIO())
    for name in set(ROLE_NAME.findall(text)):
        if roles.role(name, english, 0, reporter)[0] is None:
            roles.register_local_role(name, text_role)
    generic, version, code, diagram, include, raw, layout, nothing = directive_classes()
    scratch = utils.new_document("<rst>", frontend_settings())
    for name in set(DIRECTIVE_NAME.findall(text)):
        key = name.lower()
        if key in CODE_DIRECTIVES:
            directives.register_directive(key, code)
        elif key in INCLUDE_DIRECTIVES:
            directives.register_directive(key, include)
        elif key == "raw":
            directives.register_directive(key, raw)
        elif key in VERSION_DIRECTIVES:
            directives.register_directive(key, version)
        elif key in DIAGRAM_DIRECTIVES:
            directives.register_directive(key, diagram)
        elif key in NAVIGATION_DIRECTIVES:
            directives.register_directive(key, nothing)
        elif key in LAYOUT_DIRECTIVES:
            directives.register_directive(key, layout)
        elif directives.directive(key, english, scratch)[0] is None:
            directives.register_directive(key, generic)


def frontend_settings():
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    settings = get_default_settings(Parser)
    for key, value in SETTINGS.items():
        setattr(settings, key, value)
    settings.warning_stream = io.StringIO()
    return settings


def substitution_size(document) -> int:
    """The characters the document's substitution references would expand to (definitions referring to each other
    counted through, a cycle counted once), computed on the tree before docutils' Substitutions transform."""
    from docutils import nodes

    definitions = {}
    for node in document.findall(nodes.substitution_definition):
        for name in node["names"]:
            definitions[utils_normalize(name)] = node
    sizes: dict[str, int] = {}

    def size(name: str, seen: frozenset) -> int:
        if name in sizes:
            return sizes[name]
        node = definitions.get(name)
        if node is None or name in seen:
            return 0
        total = len(node.astext())
        for ref in node.findall(nodes.substitution_reference):
            total += size(utils_normalize(ref["refname"]), seen | {name})
        sizes[name] = total
        return total

    return sum(
        size(utils_normalize(ref["refname"]), frozenset())
        for ref in document.findall(nodes.substitution_reference)
        if not isinstance(ref.parent, nodes.substitution_definition)
    )


def utils_normalize(name: str) -> str:
    from docutils.nodes import fully_normalize_name

    return fully_normalize_name(name)


INLINE_FAILURES = 2_000  # inline markup left unmatched (a start-string with no end-string) that one file may hold
INLINE_SCAN = 20_000_000  # characters those failures may make docutils search (each searches its text block)


def budget_inliner(budget: Budget):
    """docutils' Inliner, checking the deadline for each text block and counting unmatched inline markup: each
    unmatched start-string costs a search to the end of its text block, so thousands of them in one paragraph
    (`` `a `` repeated) are quadratic; past INLINE_FAILURES of them, or INLINE_SCAN characters searched, the file is
    Unreadable."""
    from docutils.parsers.rst.states import Inliner

    inliner = Inliner()  # wrapped on the instance: Inliner builds its patterns from its own class's attributes
    parse, problematic = inliner.parse, inliner.problematic
    failures = scanned = block = 0

    def checked_parse(text, lineno, memo, parent):
        nonlocal block
        budget.check_time()
        block = len(text)
        return parse(text, lineno, memo, parent)

    def counted_problematic(text, rawsource, message):
        nonlocal failures, scanned
        failures, scanned = failures + 1, scanned + block
        if failures > INLINE_FAILURES or scanned > INLINE_SCAN:
            raise Unreadable(f"over its budget: {failures:,} unmatched inline markup strings in long text blocks")
        if failures % 64 == 0:
            budget.check_time()
        return problematic(text, rawsource, message)

    inliner.parse, inliner.problematic = checked_parse, counted_problematic
    return inliner


def parse_tree(text: str, budget: Budget | None = None):
    """The docutils document of a reST text, transformed as publish_doctree does, with its substitutions checked
    against the budget first. Unreadable past the budget or nested too deep for the parser."""
    from docutils.parsers.rst import Parser
    from docutils.readers.standalone import Reader
    from docutils.utils import new_document

    budget = budget or unbounded()
    register(text)
    parser = Parser(inliner=budget_inliner(budget))
    document = new_document("<rst>", frontend_settings())
    try:
        parser.parse(text, document)
        expanded = substitution_size(document)
        if expanded > budget.chars:
            raise Unreadable(
                f"over its budget: substitutions expand to {expanded:,} characters (at most {budget.chars:,})"
            )
        budget.check_time()
        document.transformer.populate_from_components((Reader(parser=parser), parser))
        document.transformer.apply_transforms()
    except RecursionError:
        raise Unreadable("nested too deep for the reST parser") from None
    return document
