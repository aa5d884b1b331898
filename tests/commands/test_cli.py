"""The `rag` CLI end to end (CliRunner on the real app): corpus, index and search commands, and bad input."""

import json

import pytest
from conftest import write_beir


@pytest.fixture(scope="module")
def scifact_folder(tmp_path_factory, scifact_small):
    """The SciFact subset written out in BEIR layout, so that it can be passed as --corpus PATH."""
    return write_beir(tmp_path_factory.mktemp("scifact-small"), scifact_small)


def test_corpus_list_and_show(cli):
    result = cli(["corpus", "list", "--json"])
    assert result.exit_code == 0, result.output
    names = {r["name"]: r for r in json.loads(result.stdout)}
    assert names["scifact"]["available"] and names["scifact"]["documents"] == 5183
    result = cli(["corpus", "show", "builtin", "-n", "2"])
    assert result.exit_code == 0 and "passages" in result.output


def test_ivf_pq_at_d128_is_built_listed_and_used_by_search(cli, scifact_folder, scifact_small):
    result = cli(
        ["index", "build", "--corpus", scifact_folder, "--dim", 128, "--index", "ivf-pq", "--no-screen", "--json"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads(result.stdout)
    assert manifest["dim"] == 128 and manifest["kind"] == "ivf-pq"
    listed = json.loads(cli(["index", "list", "--json"]).stdout)
    assert [(m["dim"], m["kind"]) for m in listed] == [(128, "ivf-pq")]
    info = cli(["index", "info", manifest["path"], "--json"])
    assert json.loads(info.stdout)["checksums"] == "ok"

    query = scifact_small.queries[0]
    result = cli(
        [
            "search",
            query.text,
            "--corpus",
            scifact_folder,
            "--dim",
            128,
            "--index",
            "ivf-pq",
            "--retriever",
            "dense",
            "-k",
            10,
            "--json",
        ]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["index"] == "ivf-pq" and out["dim"] == 128 and len(out["passages"]) == 10
    assert set(out["passages"][0]) >= {"id", "title", "source", "score", "text"}
    assert set(scifact_small.qrels[query.id]) & {p["id"] for p in out["passages"]}


def test_search_builds_a_missing_index_and_prints_sources(cli, scifact_folder):
    result = cli(["search", "vitamin D and bone density", "--corpus", scifact_folder, "--dim", 64, "-k", 3])
    assert result.exit_code == 0, result.output
    assert "1." in result.output and "score" in result.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", "   "], "question is empty"),
        (["search", "q", "--corpus", "wikipedia"], "valid names: builtin, scifact, hotpotqa, squad"),
        (["search", "q", "--corpus", "./notes-that-do-not-exist"], "no such folder: ./notes-that-do-not-exist"),
        (["index", "build", "--corpus", "~/no/such/notes"], "no such folder: ~/no/such/notes"),
        (["search", "q", "--corpus", "README.md"], "not a folder: README.md"),
        (["search", "q", "--encoder", "bert"], "valid encoders: minilm, smollm2-input"),
        (["search", "q", "--index", "lsh"], "valid index kinds: flat, ivf-flat, ivf-pq, hnsw, sq8, binary"),
        (["search", "q", "--reduce", "umap"], "valid reducers: pca, truncate, whiten"),
        (["search", "q", "--retriever", "splade"], "valid retrievers: dense, bm25, hybrid"),
        (["search", "q", "--dim", 0], "choose 1..384"),
        (["search", "q", "--dim", 999], "choose 1..384"),
        (["index", "build", "--dim", -3], "choose 1..384"),
        (["index", "info", "nothing-here"], "no index named"),
    ],
)
def test_bad_input_gives_a_one_line_error(cli, args, message):
    result = cli(args)
    assert result.exit_code == 1
    assert message in result.output
    assert "Traceback" not in result.output


def test_over_long_question_is_refused_as_over_http(cli, scifact_folder):
    result = cli(["search", "protein " * 2000, "--corpus", scifact_folder, "--retriever", "bm25", "--json"])
    assert result.exit_code == 1
    assert (
        "the question has 15,999 characters; the limit is 8,000" in result.output and "Traceback" not in result.output
    )


def test_rag_help_imports_neither_torch_nor_faiss():
    import subprocess
    import sys

    code = (
        "import sys; from typer.testing import CliRunner; from cli import app; "
        "r = CliRunner().invoke(app, ['--help']); assert r.exit_code == 0; print('torch' in sys.modules or 'faiss' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_invalid_utf8_documents_are_counted_in_the_output(cli, tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nEmbedding tables map ids to vectors.")
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9 \xff\xfe vectors")
    result = cli(["index", "build", "--corpus", tmp_path, "--dim", 16])
    assert result.exit_code == 0, result.output
    assert "1 documents were not valid UTF-8" in result.output
