"""Reading a user's own folder: every format through its library, metadata on each passage, and every bad file
(encrypted or corrupt PDF, binary .txt, a 50 MB text file, a symlink leading outside) refused with one line."""

from __future__ import annotations

import json

import pytest
from docfolder import make_folder

from rag.data.corpus import folder_warnings, load_corpus
from rag.data.ingest import parse_markdown, parse_rst


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("docs")
    return make_folder(root / "mydocs", root / "outside")


@pytest.fixture(scope="module")
def corpus(folder):
    return load_corpus(str(folder))


def by_source(corpus, source):
    return [p for p in corpus.passages if p.source == source]


def test_every_format_is_read_with_its_metadata(corpus):
    assert {p.source for p in corpus.passages} == {
        "guides/widget.md",
        "gears.html",
        "sprocket.rst",
        "notes.txt",
        "pulleys.pdf",
    }
    pdf = by_source(corpus, "pulleys.pdf")
    assert [(p.page, p.text) for p in pdf] == [
        (1, "Pulleys lift loads with ropes."),
        (2, "A block and tackle multiplies force."),
    ]
    rst = by_source(corpus, "sprocket.rst")
    assert rst[1].heading == "Sprocket Manual › Maintenance" and "```python\noil(chain)\n```" in rst[1].text
    assert all(p.mtime and p.mtime > 0 for p in corpus.passages)
    stored = json.loads(json.dumps(corpus.passages[0].as_dict()))
    assert {"id", "title", "source", "text", "mtime"} <= stored.keys()


def test_markdown_follows_headings_keeps_code_whole_and_reads_front_matter(corpus):
    md = by_source(corpus, "guides/widget.md")
    assert all(p.title.startswith("Widget Guide") for p in md)  # the front matter's title, not a junk passage
    assert not any("tags:" in p.text or "install, usage" in p.text for p in md)
    install = next(p for p in md if p.heading == "Widgets › Install")
    assert "```bash\n# this comment is not a heading\npip install widget[http2]\n```" in install.text
    assert not any("this comment" in p.title or "this comment" in p.heading for p in md)
    text = " ".join(p.text for p in md)
    assert "<" not in text and "badge" not in text and "logo" not in text  # HTML stripped, badge rows dropped
    assert "Hidden details text." in text  # the text of an HTML block is kept


def test_html_keeps_the_main_text_only(corpus):
    html = by_source(corpus, "gears.html")
    text = " ".join(p.text for p in html)
    assert html[0].title == "Gear Handbook — Gears" and html[1].heading == "Gears › Ratios"
    assert "teeth that mesh" in text and "ratio = driven / driver" in text
    for junk in ("tracking", "color: red", "navigation menu", "Copyright footer"):
        assert junk not in text


def test_each_bad_file_gets_one_clear_line_and_nothing_else_is_lost(corpus):
    reasons = dict(corpus.skipped)
    assert set(reasons) == {"secret.pdf", "broken.pdf", "image.txt", "huge.txt", "escape.md"}
    assert "encrypted PDF" in reasons["secret.pdf"]
    assert "not a readable PDF" in reasons["broken.pdf"]
    assert "binary content" in reasons["image.txt"]
    assert "50 MB is over the 10 MB limit" in reasons["huge.txt"]
    assert "symlink leading outside the folder" in reasons["escape.md"]
    assert not any("Private" in p.text or "never be indexed" in p.text for p in corpus.passages)
    lines = folder_warnings(corpus)
    assert len(lines) == 6  # five skipped files, one line for the unsupported extensions
    assert lines[-1].startswith("not indexed, unsupported extension (3 files): .json ×2, .png ×1")


def test_corpus_show_warns_once_per_file(cli, folder):
    result = cli(["corpus", "show", folder, "-n", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.count("warning:") == 6
    assert result.output.count("secret.pdf") == 1 and result.output.count(".json ×2") == 1


def test_a_folder_with_nothing_readable_says_what_it_skipped(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"\0\1")
    (tmp_path / "b.txt").write_bytes(b"\0\0\0binary")
    with pytest.raises(Exception, match=r"no readable documents .* b\.txt: binary content"):
        load_corpus(str(tmp_path))


def test_markdown_edge_cases():
    doc = parse_markdown(
        "---\n: not yaml [\n---\n\n    indented code\n    # not a heading\n\nText <span>inline</span> here."
    )
    assert doc.title == "" and [b.kind for b in doc.blocks] == ["code", "text"]
    assert doc.blocks[1].text == "Text inline here."
    assert parse_markdown("---\ntitle: 2024-01-02\n---\nx").metadata == {"title": "2024-01-02"}
    rst = parse_rst("Title\n=====\n\n.. unknown-directive:: x\n\nBody text.\n")
    assert rst.title == "Title" and [b.text for b in rst.blocks] == ["x", "Body text."]  # its argument is kept


@pytest.mark.slow
def test_eval_retrieval_on_your_own_folder_with_path_and_passage_qrels(cli, folder, tmp_path):
    (tmp_path / "q.jsonl").write_text(
        '{"_id": "q1", "text": "how do I install widget with http2"}\n'
        '{"_id": "q2", "text": "what does a block and tackle multiply"}\n'
    )
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tguides/widget.md\t1\nq2\tpulleys.pdf#1\t1\n")
    out = tmp_path / "out"
    result = cli(
        [
            "eval",
            "retrieval",
            "--dataset",
            folder,
            "--queries",
            tmp_path / "q.jsonl",
            "--qrels",
            tmp_path / "q.tsv",
            "--encoders",
            "minilm",
            "--dims",
            32,
            "--reduce",
            "pca",
            "--index",
            "flat",
            "--retriever",
            "bm25,dense",
            "--timed-queries",
            2,
            "--out",
            out,
        ]
    )
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert data["data"]["queries"] == 2 and data["data"]["qrels_check"]["unknown_doc_ids"] == 0
    assert data["data"]["multi_gold_queries"] == 1  # guides/widget.md stands for its three passages
    assert all(r["ndcg@10"] > 0.5 for r in data["rows"] if r["retriever"] in ("bm25", "dense"))
