"""No small file can hang or bloat a build, and no file swapped after the scan is read: each hostile input below is
generated here, sits beside an ordinary page, and is skipped with one line naming it while the page builds."""

from __future__ import annotations

import os

import pytest
from hostile import doubling_substitutions, nested_html, shared_stream_pdf, yaml_alias_bomb

from rag.config import RagError
from rag.data.budget import Budget, Unreadable
from rag.data.corpus import folder_warnings, load_corpus
from rag.data.files import read_jsonl
from rag.data.ingest import parse_markdown, parse_rst, read_document, scan_folder

PAGE = "# Flywheels\n\nA flywheel stores rotational energy.\n"


def folder_with(tmp_path, name: str, content: str | bytes):
    folder = tmp_path / "docs"
    folder.mkdir(exist_ok=True)
    (folder / "page.md").write_text(PAGE)
    target = folder / name
    target.write_bytes(content) if isinstance(content, bytes) else target.write_text(content)
    return folder


def skipped_line(corpus, name: str) -> str:
    """The one warning line naming `name`, after checking the ordinary page still built."""
    assert {p.source for p in corpus.passages} == {"page.md"}
    lines = [line for line in folder_warnings(corpus) if name in line]
    assert len(lines) == 1, folder_warnings(corpus)
    return lines[0]


def test_a_yaml_alias_bomb_in_front_matter_is_skipped(tmp_path):
    bomb = yaml_alias_bomb()
    assert len(bomb) < 600
    corpus = load_corpus(str(folder_with(tmp_path, "bomb.md", bomb)))
    assert "YAML aliases" in skipped_line(corpus, "bomb.md")


def test_front_matter_with_few_aliases_still_reads():
    doc = parse_markdown("---\ntitle: Gears\nbase: &b [x, y]\ncopy: *b\n---\n\nText.\n")
    assert doc.title == "Gears" and doc.metadata["copy"] == ["x", "y"]


def test_nested_html_is_read_in_one_linear_pass(tmp_path):
    html = nested_html(84_000).replace("x ", "x</p>")  # <div><p>x</p> repeated: quadratic for a tree walk
    corpus = load_corpus(str(folder_with(tmp_path, "deep.html", html)))
    deep = [p for p in corpus.passages if p.source == "deep.html"]
    assert deep and all(set(p.text.split()) == {"x"} for p in deep)


def test_doubling_rst_substitutions_are_refused_before_expansion(tmp_path):
    corpus = load_corpus(str(folder_with(tmp_path, "double.rst", doubling_substitutions(24))))
    assert "substitutions expand to" in skipped_line(corpus, "double.rst")
    small = parse_rst(doubling_substitutions(3))  # 8 copies: well inside the budget
    assert " ".join(b.text for b in small.blocks).count("word") == 8


def test_a_pdf_whose_pages_share_one_huge_content_stream_is_skipped(tmp_path):
    folder = folder_with(tmp_path, "note.txt", "Gears mesh.")
    shared_stream_pdf(folder / "bomb.pdf", pages=4, decoded_bytes=20 * 2**20)
    assert (folder / "bomb.pdf").stat().st_size < 200_000
    corpus = load_corpus(str(folder))
    assert {p.source for p in corpus.passages} == {"page.md", "note.txt"}
    assert "content stream over" in next(line for line in folder_warnings(corpus) if "bomb.pdf" in line)


def test_budget_bounds_characters_and_passages_by_size():
    budget = Budget.for_size(1_000)
    budget.charge(budget.chars)
    with pytest.raises(Unreadable, match="over its budget"):
        budget.charge(1)
    with pytest.raises(Unreadable, match="passages"):
        budget.check_passages(budget.passages + 1)
    assert Budget.for_size(10**12).chars == Budget.for_size(10**11).chars  # the hard cap


def test_admonitions_nested_a_thousand_deep_get_a_bounded_outcome(tmp_path):
    rst = "Title\n=====\n\n" + "".join("   " * i + ".. note::\n\n" for i in range(1000)) + "   " * 1000 + "deep\n"
    md = "# Title\n\n" + "".join("    " * i + "!!! note\n" for i in range(1000)) + "    " * 1000 + "deep\n"
    folder = folder_with(tmp_path, "deep.rst", rst)
    (folder / "deep.md").write_text(md)
    corpus = load_corpus(str(folder))
    assert "page.md" in {p.source for p in corpus.passages}
    for name in ("deep.rst", "deep.md"):  # read, or skipped with one line
        read = any(p.source == name for p in corpus.passages)
        assert read or len([line for line in folder_warnings(corpus) if name in line]) == 1


def test_a_file_swapped_for_a_symlink_after_the_scan_is_refused(tmp_path):
    folder = folder_with(tmp_path, "notes.md", "# Notes\n\nPublic text.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nnever indexed\n")
    scan = scan_folder(folder)
    assert folder / "notes.md" in scan.files
    (folder / "notes.md").unlink()
    (folder / "notes.md").symlink_to(outside / "secret.md")  # the swap, between scan and read
    with pytest.raises(Unreadable, match="outside the folder"):
        read_document(folder / "notes.md", folder.resolve())


def test_a_folder_swapped_for_a_symlink_after_the_scan_is_refused(tmp_path):
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.md").write_text("# A\n\nText.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.md").write_text("# Secret\n\nnever indexed\n")
    scan = scan_folder(folder)
    (folder / "sub" / "a.md").unlink()
    (folder / "sub").rmdir()
    (folder / "sub").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Unreadable, match="outside the folder"):
        read_document(scan.files[0], folder.resolve())


def test_symlinks_inside_the_folder_still_read(tmp_path):
    folder = folder_with(tmp_path, "real.md", "# Real\n\nGears mesh.\n")
    (folder / "alias.md").symlink_to(folder / "real.md")
    corpus = load_corpus(str(folder))
    assert {"alias.md", "real.md", "page.md"} == {p.source for p in corpus.passages}


def test_symlink_loops_and_dangling_links_are_skipped_with_one_line_each(tmp_path):
    folder = folder_with(tmp_path, "ok.txt", "Gears mesh.")
    (folder / "self.md").symlink_to(folder / "self.md")
    (folder / "a.md").symlink_to(folder / "b.md")
    (folder / "b.md").symlink_to(folder / "a.md")
    os.symlink(folder / "loopdir", folder / "loopdir")
    (folder / "gone.md").symlink_to(folder / "missing.md")
    corpus = load_corpus(str(folder))
    assert {p.source for p in corpus.passages} == {"page.md", "ok.txt"}
    loops = sorted(line for line in folder_warnings(corpus) if "symlink loop" in line)
    assert loops == [
        "skipped a.md: symlink loop; skipped",
        "skipped b.md: symlink loop; skipped",
        "skipped loopdir: symlink loop; skipped",
        "skipped self.md: symlink loop; skipped",
    ]
    assert "skipped gone.md: broken symlink; skipped" in folder_warnings(corpus)


def test_jsonl_nested_too_deep_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "1", "text": "ok"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(RagError, match="line 2: JSON nested too deep"):
        read_jsonl(path)


def test_unclosed_html_tags_are_read_in_linear_time(tmp_path):
    corpus = load_corpus(str(folder_with(tmp_path, "tags.html", "<p>Gears mesh.</p>" + "<a =" * 50_000)))
    assert any(p.source == "tags.html" and "Gears mesh." in p.text for p in corpus.passages)


def test_thousands_of_unmatched_rst_markup_strings_are_cut_off(tmp_path):
    corpus = load_corpus(str(folder_with(tmp_path, "ticks.rst", "Title\n=====\n\n" + "`a " * 30_000 + "\n")))
    assert "unmatched inline markup" in skipped_line(corpus, "ticks.rst")
