"""A new user's first hour: each finding, through the real CLI (CliRunner on the real app), real MiniLM
and FAISS, real folders. The page's and /docs's findings are in tests/serve/test_demo_page.py (a real browser)."""

from __future__ import annotations

import json
import os

import pytest
from serve_helpers import inprocess_server  # noqa: F401  (a fixture)


def notes(folder, n: int = 6):
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / "ops" / "keys").mkdir(parents=True, exist_ok=True)
        (folder / "ops" / "keys" / f"note{i}.md").write_text(f"# Note {i}\n\nGears number {i} mesh with flywheels.\n")
    return folder


# ---------------------------------------------------------------- 3. folders that stay in step


def fresh_process():
    """Each `rag` command is a new process; in-process, forget the retrievers the last command opened."""
    from rag.retrieve import DEFAULT_POOL

    DEFAULT_POOL.entries.clear()


@pytest.mark.slow  # about 15 s: three commands and the agent's imports
def test_search_updates_a_changed_folder_first_and_no_update_refuses(cli, tmp_path):
    folder = notes(tmp_path / "notes")
    built = cli(["index", "build", "--corpus", folder, "--json"])
    assert built.exit_code == 0, built.output
    run = os.urandom(4).hex()  # new text every run: no cache holds its vector
    (folder / "ops" / "keys" / "note1.md").write_text(f"# Note 1\n\nRotate the zorblax keys every ninety days {run}.\n")
    fresh_process()
    result = cli(["search", "how often are zorblax keys rotated?", "--corpus", folder, "-k", 1, "--json"])
    assert result.exit_code == 0, result.output
    assert "changed since its index was built (0 added, 1 changed, 0 removed of 6 passages)" in result.stderr
    assert "encoding 1 passage" in result.stderr  # only the changed file's passage
    news = [line for line in result.stderr.splitlines() if "changed since" in line or "updated 1 index" in line]
    assert len(news) == 2 and not any(line.startswith("warning:") for line in news), news  # news, not warnings
    assert "zorblax" in json.loads(result.stdout)["passages"][0]["text"]

    (folder / "ops" / "keys" / "note2.md").write_text("# Note 2\n\nA brand new text about quokkas.\n")
    fresh_process()
    refused = cli(["search", "quokkas", "--corpus", folder, "--no-update"])
    assert refused.exit_code == 1 and "rag index update --corpus" in refused.output
    fresh_process()
    asked = cli(["ask", "What about quokkas?", "--corpus", folder, "--retriever", "dense", "--json"])
    assert asked.exit_code == 0, (asked.output, repr(asked.exception))
    assert "updating its indexes first" in asked.stderr and "quokkas" in asked.stdout


def test_a_huge_change_is_not_updated_unasked(tmp_path):
    from rag.config import RagError
    from rag.data.corpus import load_corpus
    from rag.index.spec import IndexSpec
    from rag.index.store import build_and_save
    from rag.index.update import refresh_if_changed

    folder = notes(tmp_path / "big")
    spec = IndexSpec().validated()
    build_and_save(load_corpus(str(folder)), spec)
    for i in range(4):
        (folder / f"new{i}.md").write_text(f"# New {i}\n\nFresh words {i}.\n")
    with pytest.raises(RagError, match=r"4 added.*over 3 passages to encode.*rag index update --corpus"):
        refresh_if_changed(load_corpus(str(folder)), spec, max_encode=3)


# ---------------------------------------------------------------- 5. clear errors for misconfiguration


def test_openai_without_its_base_url_fails_at_once_naming_the_variable(cli, monkeypatch):
    monkeypatch.delenv("RAG_OPENAI_BASE_URL", raising=False)
    result = cli(["ask", "x", "--llm", "openai", "--retriever", "bm25"])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "RAG_OPENAI_BASE_URL" in lines[0] and "grade" not in result.output, result.output


# ---------------------------------------------------------------- 9. long work says so up front


def test_an_encode_over_a_minute_is_announced_before_it_runs():
    """The threshold: an estimate over about a minute is announced (it was 10 minutes; `rag advise --corpus scifact`
    encoded for 6.5 minutes without a word). The rate comes from the first 32 passages, before the rest run."""
    import warnings

    from rag.config import RagWarning
    from rag.encoders import get_encoder
    from rag.encoders.cache import announce_estimate

    encoder = get_encoder("minilm")
    with pytest.warns(RagWarning, match=r"encoding 1,952 passages with minilm will take about 1 minute\(s\) here"):
        announce_estimate(encoder, seconds=1.0, probed=32, remaining=32 * 61)  # 61 s at 32 passages/s
    with warnings.catch_warnings():
        warnings.simplefilter("error", RagWarning)
        announce_estimate(encoder, seconds=1.0, probed=32, remaining=32 * 50)  # 50 s: not worth a line


# ---------------------------------------------------------------- 6. filters that explain an empty result


def test_a_filter_matching_nothing_says_why_with_the_glob_that_would(cli, tmp_path):
    folder = notes(tmp_path / "notes")
    result = cli(["search", "gears", "--corpus", folder, "--retriever", "bm25", "--where", "source=*.md", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["passages"] == []
    assert "matches none of the 6 sources" in result.stderr
    assert "did you mean --where 'source=**/*.md' (6 sources)?" in result.stderr
    assert "Closest sources: ops/keys/note" in result.stderr
    ok = cli(["search", "gears", "--corpus", folder, "--retriever", "bm25", "--where", "source=**/*.md", "--json"])
    assert json.loads(ok.stdout)["passages"] and "matches none" not in ok.stderr


def test_where_hint_suggests_a_folder_glob_and_never_for_a_match():
    from rag.data.where_hint import where_hint

    sources = ["ops/keys/rotate.md", "ops/keys/revoke.md", "guide/install.md"]
    assert where_hint("source=ops/**", sources) is None and where_hint(None, sources) is None
    hint = where_hint("source=ops", sources)
    assert "did you mean --where 'source=ops/**' (2 sources)?" in hint
    assert "in the corpus. Closest sources: " in where_hint("source=nothing/*.rst", sources)


# ---------------------------------------------------------------- 4. only servable things are offered


def test_models_and_config_offer_only_what_would_be_served(inprocess_server, tmp_path):
    """Builds off: a folder corpus with nothing built was listed as rag-notes-bm25 and answered 404."""
    import httpx

    folder = notes(tmp_path / "notes")
    (folder / "unique.md").write_text(f"# Unique\n\n{os.urandom(8).hex()} words nobody indexed.\n")
    url = inprocess_server(corpora={"notes": str(folder)})
    models = [m["id"] for m in httpx.get(url + "/v1/models", timeout=120).json()["data"]]
    assert "rag" in models and "rag-builtin-minilm-d384-flat-hybrid" in models
    assert "rag-notes-bm25" not in models
    configurations = httpx.get(url + "/config", timeout=120).json()["configurations"]
    assert [c["model"] for c in configurations] == models
    for c in configurations:  # every offered configuration answers
        body = {"question": "gears", **{k: v for k, v in c.items() if k != "model"}}
        assert httpx.post(url + "/search", json=body, timeout=120).status_code == 200, c
    not_offered = httpx.post(
        url + "/search", json={"question": "gears", "corpus": "notes", "retriever": "bm25"}, timeout=120
    )
    assert not_offered.status_code == 404


def test_serve_watch_updates_a_served_folder_in_the_background(inprocess_server, tmp_path):
    import httpx
    from conftest import wait_until

    folder = notes(tmp_path / "watched")
    url = inprocess_server(
        corpora={"notes": str(folder)}, watch=True, warm=[{"corpus": str(folder), "retriever": "dense"}]
    )
    body = {"question": "Which marsupial hops on the quay?", "corpus": "notes", "retriever": "dense", "k": 1}
    assert "quokka" not in httpx.post(url + "/search", json=body, timeout=60).text
    (folder / "quokka.md").write_text("# Quokka\n\nA quokka hops along the quay at dawn.\n")

    def found():
        return "quokka" in httpx.post(url + "/search", json=body, timeout=60).json()["passages"][0]["text"]

    wait_until(found, 60, "the new file in the served index", poll=0.5)
    health = httpx.get(url + "/health", timeout=120).json()
    assert health["swaps"] >= 1  # a new version, swapped in like a rebuild
    assert health["watch"]["ok"] and health["watch"]["updates"] >= 1 and health["watch"]["errors"] == 0
    metrics = httpx.get(url + "/metrics", timeout=120).text
    assert "rag_watch_ok 1.0" in metrics and "rag_watch_errors_total 0.0" in metrics


@pytest.mark.parametrize("retriever", ["bm25", "hybrid"])
def test_serve_watch_keeps_bm25_served_with_builds_off(inprocess_server, tmp_path, retriever):
    """With builds on request off, a watched folder's change gets its new BM25 from the watcher, so bm25 and hybrid
    search keep answering (and find the new text) instead of a 404."""
    import httpx
    from conftest import wait_until

    folder = notes(tmp_path / "watched")
    url = inprocess_server(
        corpora={"notes": str(folder)},
        watch=True,
        build_missing=False,
        warm=[{"corpus": str(folder), "retriever": retriever}],
    )
    body = {"question": "Which marsupial hops on the quay?", "corpus": "notes", "retriever": retriever, "k": 1}
    assert httpx.post(url + "/search", json=body, timeout=60).status_code == 200
    (folder / "quokka.md").write_text("# Quokka\n\nA quokka hops along the quay at dawn.\n")

    def found():
        reply = httpx.post(url + "/search", json=body, timeout=60)
        assert reply.status_code == 200, reply.text
        passages = reply.json()["passages"]
        return bool(passages) and "quokka" in passages[0]["text"]

    wait_until(found, 120, f"the new file in the served {retriever} index", poll=0.5)


# ---------------------------------------------------------------- 7. CLI rough edges


def run_rag(*args, env=None, close_stdout=False):
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "cli.py", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    if close_stdout:
        proc.stdout.close()  # the reader went away before anything was written (`| head -0`)
        return proc.wait(60), "", proc.stderr.read().decode()
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("args", [("index", "build", "--help"), ("corpus", "list")])
def test_a_reader_that_goes_away_gets_no_error_line(args):
    code, _, err = run_rag(*args, close_stdout=True)
    assert "error" not in err.lower() and "Traceback" not in err, err
    assert code in (0, 1)


def test_usage_errors_are_one_line_with_exit_2_and_flags_show_no_placeholder(cli):
    result = cli(["search", "x", "--jsn"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "No such option: --jsn" in lines[0] and "--help" in lines[0], result.output
    for args, message in ((["--bogus"], "No such option: --bogus"), (["index", "lst"], "No such command 'lst'")):
        result = cli(args)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert result.exit_code == 2 and len(lines) == 1 and message in lines[0], result.output
    assert cli([]).exit_code == 2 and "Usage" in cli([]).output  # `rag` alone still shows the help
    help_text = cli(["search", "--help"]).output
    assert "<bool>" not in help_text and "--json" in help_text


def narrow_console(monkeypatch, module):
    import io

    from rich.console import Console

    out = Console(width=80, file=io.StringIO(), color_system=None)
    monkeypatch.setattr(module, "console", out)
    return out


def test_tables_keep_their_key_columns_whole_at_80_columns(cli, tmp_path, monkeypatch):
    from types import SimpleNamespace

    import rag.commands.advise as advise_cmd
    import rag.commands.index as index_cmd

    folder = notes(tmp_path / "a-folder-with-a-rather-long-name")
    assert cli(["index", "build", "--corpus", folder, "--dim", 128, "--index", "ivf-flat"]).exit_code == 0
    out = narrow_console(monkeypatch, index_cmd)
    assert cli(["index", "list"]).exit_code == 0
    text = out.file.getvalue()
    assert "…" not in text and "vectors" in text and "minilm-d128-ivf-flat" in text, text
    assert max(len(line) for line in text.splitlines()) <= 80 and " cpu" in text  # the last column too

    row = {"encoder": "smollm2-input-wbm25", "dim": 128, "reduce": "distill-itq", "index": "opq-pq", "code_bytes": 16}
    rows = [{**row, "index_mb": 0.08, "ndcg@10": 0.612, "share": 0.95, "fits": True}]
    out = narrow_console(monkeypatch, advise_cmd)
    advise_cmd._render(
        SimpleNamespace(measure="ndcg@10", rows=rows, recommended=rows[0], notes=[], spearman=None, command=None)
    )
    text = out.file.getvalue()
    assert "…" not in text and "opq-pq" in text and " 128 " in text and "smollm2-input-wbm25" in text, text


def test_index_build_and_list_say_what_their_bytes_count(cli, tmp_path):
    folder = notes(tmp_path / "n")
    built = cli(["index", "build", "--corpus", folder])
    assert "bytes with passages and reducer" in " ".join(built.output.split())
    listed = " ".join(cli(["index", "list"]).output.split())
    assert "index B: the FAISS index alone" in listed and "files B: every file" in listed


def test_library_chatter_stays_out_of_the_output(caplog):
    """faiss's 'Could not load library with AVX512 support ... ModuleNotFoundError' at `rag serve` start (its log
    level is INFO), and a DEBUG:bm25s line on the first query after an ONNX export had set the root logger to DEBUG."""
    import logging
    import subprocess
    import sys

    code = "import cli, logging; logging.basicConfig(level='INFO'); import faiss"
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stderr
    assert "AVX512" not in err and "ModuleNotFoundError" not in err, err

    from rag.data.corpus import Passage
    from rag.retrieve.bm25 import BM25

    caplog.set_level(logging.DEBUG)
    BM25([Passage(id=f"p{i}", title="", text=f"gear {i} {os.urandom(4).hex()}", source="x.md") for i in range(5)])
    assert not [r for r in caplog.records if r.name.startswith("bm25s") and r.levelno < logging.WARNING]


def test_answer_step_says_passage_in_the_singular_and_no_answer_plainly():
    from rag.commands.agent import answer_line

    assert "citing 1 passage" in answer_line({"backend": "extractive", "citations": ["a"]})
    assert "citing 1 passages" not in answer_line({"backend": "extractive", "citations": ["a"]})
    assert "citing 2 passages" in answer_line({"backend": "extractive", "citations": ["a", "b"]})
    none = answer_line({"backend": "none", "citations": []})
    assert "by none" not in none and "nothing relevant" in none


def test_corpus_list_names_every_format_it_reads(cli):
    text = " ".join(cli(["corpus", "list"]).output.split())
    assert all(ext in text for ext in (".html", ".pdf", ".rst", ".md", ".txt")) and ".md/.txt files" not in text


def test_a_wrong_python_keyword_is_a_rag_error_naming_the_closest():
    import rag
    from rag.config import RagError

    with pytest.raises(RagError, match=r"unknown setting 'dimension'; did you mean dim\? accepted: encoder, dim"):
        rag.open_retriever("builtin", dimension=64)
    with pytest.raises(RagError, match="unknown setting 'retreiver'; did you mean retriever"):
        rag.ask("What is d?", retreiver="bm25")


# ---------------------------------------------------------------- 7. reading details


def test_reading_details_html_code_pdf_title_and_heading_rst_language(tmp_path):
    import io

    from docfolder import pdf_bytes
    from pypdf import PdfReader, PdfWriter
    from pypdf.xmp import XmpInformation

    from rag.data.corpus import load_corpus

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "api.html").write_text(
        "<html><body><main><h1>API</h1><p>Call <code>run()</code>. Then <em>stop</em>, at once.</p></main></body></html>"
    )
    # a page whose first line is a heading above the text (two text lines: 'Pulley Basics', then the sentence)
    plain = pdf_bytes(["Pulley Basics) Tj 0 -24 Td (Pulleys lift loads with ropes."])
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(plain)))
    xmp = XmpInformation.create()
    xmp.dc_title = {"x-default": "The Pulley Handbook"}  # the title only in the XMP metadata, as many producers do
    writer.xmp_metadata = xmp
    out = io.BytesIO()
    writer.write(out)
    (folder / "handbook-v2.pdf").write_bytes(out.getvalue())
    (folder / "guide.rst").write_text("Guide\n=====\n\n.. code-block:: python\n\n   print(sum([1, 2]))\n")

    by_source = {p.source: p for p in load_corpus(str(folder)).passages}
    assert "Call run(). Then stop, at once." in by_source["api.html"].text
    pdf = by_source["handbook-v2.pdf"]
    assert pdf.title.startswith("The Pulley Handbook") and "handbook v2" not in pdf.title
    assert pdf.text == "Pulleys lift loads with ropes." and pdf.heading == "Pulley Basics"
    assert by_source["guide.rst"].text.startswith("```python\nprint(sum([1, 2]))")


def test_the_agent_never_rewrites_a_question_into_a_search_it_already_ran():
    """`rag ask x` rewrote "x" to "x" four times."""
    import rag

    result = rag.ask("x", retriever="bm25")
    searched = [q for s in result["steps"] if s["node"] == "retrieve" for q in s["queries"]]
    assert len(searched) == len({q.lower() for q in searched}), searched
    assert [s["node"] for s in result["steps"]].count("rewrite") <= 2
