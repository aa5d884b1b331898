"""Incremental indexes: a changed folder encodes only its new or changed passages (counted), `rag index update`
swaps in a new version, and `rag index prune` removes old versions and orphaned cache entries but keeps the
version a running retriever holds."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest

from rag.index.spec import IndexSpec

SECTIONS = ["Overview", "Install", "Usage", "Tuning", "Limits"]


def write_doc(folder: Path, name: str, topic: str) -> None:
    parts = [f"# {topic.title()} guide\n"]
    for s in SECTIONS:
        parts.append(
            f"## {s}\n\n{s} notes for the {topic} component: it stores {topic} records in blocks of "
            f"{len(topic) * 7} rows and reads them back in order.\n"
        )
    (folder / f"{name}.md").write_text("\n".join(parts))


@pytest.fixture
def docs(tmp_path) -> Path:
    """About 200 passages: 40 documents of 5 sections (the same text every run, so the cache is warm)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(40):
        write_doc(folder, f"doc{i:02d}", f"topic{i:02d}")
    return folder


@pytest.mark.slow
def test_adding_one_file_encodes_only_its_passages(cli, docs):
    built = cli(["index", "build", "--corpus", docs, "--dim", 32, "--json"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["vectors"] == 200
    run = os.urandom(4).hex()  # new text every run: no cache can hold it
    write_doc(docs, "added", f"zeppelin{run}")
    # the index no longer matches the folder; --no-update refuses it (without, search would update first)
    stale = cli(["search", "zeppelin", "--corpus", docs, "--dim", 32, "--no-update"])
    assert stale.exit_code == 1 and f"rag index update --corpus {docs}" in " ".join(stale.output.split())
    result = cli(["index", "update", "--corpus", docs, "--no-screen", "--json"])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["status"] == "updated" and row["vectors"] == 205
    assert (row["encoded"], row["added"], row["changed"], row["removed"]) == (5, 5, 0, 0)
    # an edited section and a deleted file: one passage encoded, five removed
    (docs / "doc03.md").write_text((docs / "doc03.md").read_text().replace("reads them back", f"rereads {run}"))
    (docs / "doc07.md").unlink()
    [row] = json.loads(cli(["index", "update", "--corpus", docs, "--no-screen", "--json"]).stdout)
    assert (row["encoded"], row["added"], row["changed"], row["removed"], row["vectors"]) == (5, 0, 5, 5, 200)
    again = json.loads(cli(["index", "update", "--corpus", docs, "--no-screen", "--json"]).stdout)
    assert again[0]["status"] == "up to date" and again[0]["encoded"] == 0
    hits = json.loads(cli(["search", f"zeppelin{run} records", "--corpus", docs, "--dim", 32, "--json"]).stdout)
    assert hits["passages"][0]["source"] == "added.md"


def test_update_without_an_index_says_how_to_build_one(cli, tmp_path):
    write_doc(tmp_path, "a", "alpha")
    result = cli(["index", "update", "--corpus", tmp_path])
    assert result.exit_code == 1 and "rag index build --corpus" in result.output


@pytest.mark.slow
def test_prune_keeps_the_current_and_the_served_version(cli, tmp_path, monkeypatch):
    from rag.data.corpus import load_corpus
    from rag.index.store import build_and_save
    from rag.index.update import prune
    from rag.index.versions import version_folders
    from rag.retrieve import RetrievalSettings, RetrieverPool, open_retriever

    shared = Path(os.environ["RAG_CACHE_DIR"])
    cache = tmp_path / "cache"  # pruning must never touch the shared test cache
    cache.mkdir()
    if (shared / "onnx").exists():
        (cache / "onnx").symlink_to(shared / "onnx")  # the exported model, not an embedding cache
    monkeypatch.setenv("RAG_CACHE_DIR", str(cache))
    folder = tmp_path / "small"
    folder.mkdir()
    for i in range(3):
        write_doc(folder, f"d{i}", f"part{i}")
    first = build_and_save(load_corpus(str(folder)), IndexSpec("minilm", 16, "flat"))
    pool = RetrieverPool()
    served = open_retriever(RetrievalSettings(corpus=str(folder), dim=16, retriever="dense"), pool=pool)
    assert served.search("part1 records")
    link = Path(first["path"])
    for n in range(2):  # two more versions; the build's own pruning keeps two, the served one stays too
        (folder / "d0.md").write_text((folder / "d0.md").read_text() + f"\nEdit {n} {os.urandom(4).hex()}.\n")
        build_and_save(load_corpus(str(folder)), IndexSpec("minilm", 16, "flat"))
    versions = version_folders(link)
    assert len(versions) == 3 and versions[0] == served.loaded.path

    result = cli(["index", "prune", "--keep", 1, "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["versions_removed"] == [str(versions[1])]  # not the current one, not the one being served
    assert out["passage_vectors_removed"] >= 1 and out["bytes_freed"] > 0  # the middle version's edit
    assert len(list((cache / "embeddings").glob("*-minilm*"))) == 2  # per-corpus caches of the two versions left

    del served, pool  # the server stops: its version is no longer held
    gc.collect()
    out = prune(keep=1)
    assert out["versions_removed"] == [str(versions[0])] and version_folders(link) == [versions[2]]
    assert cli(["search", "part2 records", "--corpus", folder, "--dim", 16, "--retriever", "dense"]).exit_code == 0
    assert "--keep must be at least 1" in cli(["index", "prune", "--keep", 0]).output
