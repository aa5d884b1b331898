"""The Python API (rag.open_retriever, rag.ask, rag.as_langchain_retriever), the README's code blocks, filters on
source globs, LangChain's own standard retriever suite, and faithful display of bracketed text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

import rag
from rag.config import RagError

REPO = Path(__file__).resolve().parents[2]
BRACKETS = (
    "Install with pip install httpx[http2] today. See [link](https://example.org) for more. "
    "The flags [x] and [/b] stay as written, as does the note [1]."
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("api") / "kb"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "notes").mkdir()
    (root / "brackets.md").write_text(f"# Brackets [x] doc\n\n{BRACKETS}\n")
    for i in range(6):  # BM25 ranks notes/ first for "flywheel energy"; the filter must still return k from docs/
        (root / "notes" / f"n{i}.md").write_text(f"# Note {i}\n\nA flywheel stores rotational energy, note {i}.\n")
    (root / "docs" / "a.md").write_text("# A\n\nThe flywheel guide: energy grows with the square of speed.\n")
    (root / "docs" / "deep" / "b.md").write_text("# B\n\nEnergy storage without a flywheel uses batteries.\n")
    (root / "docs" / "c.txt").write_text("Flywheel energy, in a text file.\n")
    return root


def test_faithful_display_of_brackets_in_search_show_and_ask(cli, folder):
    wanted = ["httpx[http2]", "[link](https://example.org)", "[x]", "[/b]", "[1]"]
    outputs = {
        "search": cli(["search", "install httpx http2", "--corpus", folder, "--retriever", "bm25", "-k", 1]),
        "show": cli(["corpus", "show", folder, "-n", 1]),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.output)
        for text in wanted:
            assert text in result.output, (name, text, result.output)
    for question, texts in (
        ("Which flags stay as written?", ["[x] and [/b]", "note [1]. [1]"]),
        ("How do I install httpx with http2?", ["httpx[http2]", "Brackets [x] doc"]),
    ):
        result = cli(["ask", question, "--corpus", folder, "--retriever", "bm25"])
        assert result.exit_code == 0, result.output
        for text in texts:  # the answer, its citation marker and the cited title, as written
            assert text in result.output, (question, text, result.output)
    assert "Brackets [x] doc" in outputs["search"].output
    assert "[n] citations" in " ".join(cli(["ask", "--help"]).output.split())


def test_open_retriever_searches_with_k_and_a_source_filter(folder):
    docs = rag.open_retriever(folder, retriever="bm25")
    assert len(docs.search("flywheel energy", k=3)) == 3
    hits = docs.search("flywheel energy", k=3, where="source=docs/**")
    assert len(hits) == 3 and {h.passage.source for h in hits} == {"docs/a.md", "docs/deep/b.md", "docs/c.txt"}
    assert [h.passage.source for h in docs.search("flywheel energy", k=5, where="source=docs/*.md")] == ["docs/a.md"]
    assert {h.passage.source for h in docs.search("flywheel", k=2, where="source=**/*.txt")} == {"docs/c.txt"}
    hit = next(h for h in hits if h.passage.source == "docs/a.md").as_dict()
    assert hit["heading"] == "A" and hit["mtime"] > 0 and {"id", "title", "text", "score"} <= hit.keys()
    with pytest.raises(RagError, match="source=GLOB"):
        docs.search("flywheel", where="title=x")


@pytest.mark.slow
def test_dense_filter_over_fetches_until_k_remain(cli, folder):
    docs = rag.open_retriever(folder, retriever="dense", dim=32)
    hits = docs.search("flywheel energy", k=3, where="source=docs/**")
    assert len(hits) == 3 and all(h.passage.source.startswith("docs/") for h in hits)
    result = cli(
        ["search", "flywheel energy", "--corpus", folder, "--dim", 32, "-k", 2, "--where", "source=docs/**", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert [p["source"][:5] for p in json.loads(result.stdout)["passages"]] == ["docs/", "docs/"]
    bad = cli(["search", "x", "--corpus", folder, "--where", "source"])
    assert bad.exit_code == 1 and "source=GLOB" in bad.output


def test_ask_returns_what_rag_ask_json_prints(cli, folder):
    result = rag.ask("What does a flywheel store?", corpus=folder, retriever="bm25", where="source=notes/**")
    printed = json.loads(
        cli(
            [
                "ask",
                "What does a flywheel store?",
                "--corpus",
                folder,
                "--retriever",
                "bm25",
                "--where",
                "source=notes/**",
                "--json",
            ]
        ).stdout
    )
    assert result.keys() == printed.keys() and result["answer"] == printed["answer"]
    assert result["citations"] and all(c["id"].startswith("notes/") for c in result["citations"])
    with pytest.raises(RagError, match="max_steps"):
        rag.ask("x?", corpus=folder, retriever="bm25", max_steps=0)


def test_langchain_retriever_honours_search_kwargs_and_per_call_k(folder):
    lc = rag.as_langchain_retriever(corpus=folder, retriever="bm25", search_kwargs={"k": 2, "where": "source=docs/**"})
    docs = lc.invoke("flywheel energy")
    assert len(docs) == 2 and all(d.metadata["source"].startswith("docs/") for d in docs)
    assert len(lc.invoke("flywheel energy", k=1)) == 1
    assert {d.metadata["source"] for d in lc.invoke("flywheel", where="source=notes/n1.md")} == {"notes/n1.md"}


def test_import_rag_stays_light():
    import subprocess
    import sys

    code = (
        "import sys, rag; print(sorted(m for m in ('torch', 'faiss', 'langchain_core', 'rag.api') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


def readme_python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("\n### Python\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.slow
def test_the_readme_python_api_blocks_run(tmp_path, monkeypatch):
    blocks = readme_python_blocks()
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # each block runs as written, in order


class TestRagLangChainRetriever(RetrieversIntegrationTests):
    """LangChain's own standard suite for retrievers (langchain-tests)."""

    @property
    def retriever_constructor(self):
        return type(rag.as_langchain_retriever(corpus="builtin", retriever="bm25"))

    @property
    def retriever_constructor_params(self) -> dict:
        return {"inner": rag.open_retriever("builtin", retriever="bm25")}

    @property
    def retriever_query_example(self) -> str:
        return "How many parameters does an embedding table have?"


def test_extractive_answers_leave_out_code_markup_and_logs(tmp_path):
    (tmp_path / "server.md").write_text(
        "# Server\n\n## Startup\n\nThe server listens on port 8000 after startup.\n\n"
        '```text\nINFO: Application startup complete.\n```\n\n<div><details markdown="1">More</details></div>\n\n'
        "INFO: Uvicorn running on http://127.0.0.1:8000\n\nThe port can be changed with --port.\n"
    )
    result = rag.ask("Which port does the server listen on after startup?", corpus=tmp_path, retriever="bm25")
    assert "port 8000" in result["answer"]
    for debris in ("```", "<div", "INFO:", "Uvicorn", "</details>"):
        assert debris not in result["answer"], result["answer"]
    assert re.findall(r"\[(\d+)\]", result["answer"])[0] == "1"  # citations numbered in order of appearance
