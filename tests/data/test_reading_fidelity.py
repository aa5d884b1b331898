"""Documentation read as its site shows it: reST as Sphinx writes it, mkdocs Markdown with its extensions, HTML
without split words. One test per construct, and the fidelity check on the real documentation folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import data_dir
from rag.data.corpus import load_corpus
from rag.data.fidelity import fidelity, markdown_identifiers, rst_identifiers
from rag.data.ingest import parse_html, parse_markdown, parse_rst


def rst_text(body: str) -> str:
    return "\n\n".join(b.text for b in parse_rst("Page\n====\n\n" + body).blocks)


def md_blocks(body: str):
    return parse_markdown(body).blocks


def test_sphinx_roles_render_as_their_text():
    text = rst_text(
        "Use :class:`~requests.Session` or :meth:`Session.get` and :func:`!plain`; see :ref:`the guide <guide>`,\n"
        ":attr:`requests.Response.ok`, :py:class:`a.B` and :unknownrole:`some text`.\n"
    )
    assert text == ("Use Session or Session.get and plain; see the guide,\nrequests.Response.ok, a.B and some text.")


def test_no_parser_message_ever_enters_the_text():
    text = rst_text(
        "- item with :madeup:`role`\n- :ref:`label`\n\n.. nosuchdirective:: arg\n\n   Content kept.\n\n"
        "A `broken link`_ and a bad |subst| and an :unknown:\n\n* unclosed ``literal\n"
    )
    for message in ("ERROR/", "INFO/", "WARNING/", "SEVERE/", "<string>", "Unknown interpreted", "Unknown directive"):
        assert message not in text
    assert "role" in text and "label" in text and "Content kept." in text and "broken link" in text


def test_sphinx_directives_keep_their_content():
    text = rst_text(
        ".. tab-set::\n\n   .. tab:: Linux\n\n      Install with apt.\n\n   .. tab:: Windows\n\n      Install with winget.\n\n"
        ".. note::\n\n   Sessions reuse connections.\n\n"
        ".. warning:: Never disable verification.\n\n"
        ".. versionadded:: 2.4\n   The timeout tuple.\n\n"
        ".. deprecated:: 3.0\n\n   Use ``send`` instead.\n\n"
        ".. seealso:: The advanced guide.\n\n"
        ".. mermaid::\n\n   graph TD; A-->B\n\n"
        ".. raw:: html\n\n   <div class='x'><p>Raw <b>html</b> text</p></div>\n\n"
        ".. raw:: latex\n\n   \\\\newpage\n"
    )
    for kept in (
        "Linux",
        "Install with apt.",
        "Install with winget.",
        "Note: Sessions reuse connections.",
        "Warning: Never disable verification.",
        "New in version 2.4: The timeout tuple.",
        "Deprecated since version 3.0.",
        "Use send instead.",
        "The advanced guide.",
        "graph TD; A-->B",
        "Raw html text",
    ):
        assert kept in text, kept
    assert "newpage" not in text and "<div" not in text
    assert rst_text(".. VersionChanged:: 1.2\n   Mixed case.\n") == "Changed in version 1.2: Mixed case."


def test_code_blocks_with_sphinx_options_stay_code():
    doc = parse_rst(
        "Page\n====\n\n.. code-block:: python\n   :emphasize-lines: 2\n   :caption: demo\n\n   a = 1\n   b = 2\n"
    )
    assert [b.kind for b in doc.blocks] == ["code"] and doc.blocks[0].text == "```python\na = 1\nb = 2\n```"


def test_includes_are_a_reference_and_nothing_outside_the_folder_is_read(tmp_path):
    folder = tmp_path / "docs" / "inner"
    folder.mkdir(parents=True)
    (tmp_path / "secret").write_text("TOP-SECRET-CONTENT\n")
    (folder / "page.rst").write_text(
        "Page\n====\n\n.. literalinclude:: ../../secret\n   :language: text\n\n.. include:: /etc/passwd\n\nBody.\n"
    )
    corpus = load_corpus(str(folder))
    text = " ".join(p.text for p in corpus.passages)
    assert "[included: ../../secret]" in text and "[included: /etc/passwd]" in text
    assert "TOP-SECRET" not in text and "root:" not in text


def test_mkdocs_admonitions_and_details_are_text_not_code():
    blocks = md_blocks(
        '# Page\n\n!!! note "Read this"\n    Sessions reuse `connections`.\n\n    Second paragraph.\n\n'
        "??? tip\n    Collapsed tip.\n\n???+ warning\n    Open warning.\n\nAfter.\n"
    )
    assert [b.kind for b in blocks] == ["text"] * len(blocks)
    texts = [b.text for b in blocks]
    assert texts == [
        "Read this",
        "Sessions reuse `connections`.",
        "Second paragraph.",
        "Tip",
        "Collapsed tip.",
        "Warning",
        "Open warning.",
        "After.",
    ]


def test_mkdocs_tabs_keep_their_content_and_code_inside_stays_code():
    blocks = md_blocks(
        '# Page\n\n=== "Python 3.10+"\n\n    ```python\n    x: int | None\n    ```\n\n=== "Older"\n\n    Text.\n'
    )
    assert [(b.kind, b.text) for b in blocks] == [
        ("text", "Python 3.10+"),
        ("code", "```python\nx: int | None\n```"),
        ("text", "Older"),
        ("text", "Text."),
    ]


def test_pymdownx_blocks_keep_their_content_nested_or_not():
    blocks = md_blocks(
        "# Page\n\n/// tip | Use a session\n\nSessions are faster.\n\n///\n\n"
        "//// tab | Python 3.10+\n\n/// note\n    type: info\n\nInner note.\n\n///\n\n```python\nx = 1\n```\n\n////\n"
    )
    assert [b.text for b in blocks] == [
        "Use a session",
        "Sessions are faster.",
        "Python 3.10+",
        "Note",
        "Inner note.",
        "```python\nx = 1\n```",
    ]


def test_snippet_includes_appear_as_references():
    text = " ".join(
        b.text
        for b in md_blocks(
            '# Page\n\n{* ../../docs_src/app/tutorial001.py hl[3:4] *}\n\n--8<-- "snippets/common.md"\n\n'
            "```python\n{!> ../../docs_src/app/tutorial002.py!}\n```\n"
        )
    )
    for path in ("../../docs_src/app/tutorial001.py", "snippets/common.md", "../../docs_src/app/tutorial002.py"):
        assert f"[included: {path}]" in text


def test_heading_anchors_are_not_part_of_the_heading():
    blocks = md_blocks("# Title { #title }\n\n## First steps { #first-steps }\n\nText.\n")
    assert blocks[0].headings == ("Title", "First steps")


def test_html_never_splits_a_word():
    doc = parse_html("<main><p>Initial<wbr>ize the <b>Multi</b>Dataset<i>Batch</i>Samplers.<br>Next line</p></main>")
    assert doc.blocks[0].text == "Initialize the MultiDatasetBatchSamplers. Next line"


def test_fidelity_identifiers_are_read_from_the_source():
    assert markdown_identifiers("Use `Depends` and `x.y()`.\n\n```python\n`not_prose`\n```\n") == ["Depends", "x.y()"]
    assert rst_identifiers("See :class:`~a.Session` and ``timeout``.\n\n::\n\n   `code`\n") == ["Session", "timeout"]


DOCS = ("fastapi", "requests")


@pytest.mark.parametrize("name", DOCS)
def test_real_documentation_reads_faithfully(name):
    folder = Path(data_dir()) / "docs" / name
    if not folder.is_dir():
        pytest.skip(f"no {folder}")
    report = fidelity(folder)
    assert report["identifiers"] > 100 and report["share"] >= 0.99, report["misses"][:10]
    assert report["parser_message_passages"] == 0, report["parser_message_ids"]
    assert report["markup_debris_passages"] == 0, report["markup_debris_ids"]
    assert not report["skipped"]


def test_conditions_and_layouts_keep_their_content_without_their_argument():
    text = rst_text(
        ".. only:: html\n\n   Only html.\n\n.. grid:: 1 2 2 2\n\n   .. grid-item-card:: Card title\n\n      Card body.\n"
    )
    assert text == "Only html.\n\nCard title\n\nCard body."
    assert [b.text for b in md_blocks("/// html | div.note\nInside.\n///\n")] == ["Inside."]
