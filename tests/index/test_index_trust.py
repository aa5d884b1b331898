"""What an index folder may not make search do: a re-sealed manifest that lists a file outside its
version, a version link that points outside the index folder, a `.readers` lock that is a folder, and, with
RAG_INDEX_KEY, a manifest re-sealed by someone without the key: each is refused by search and by verify."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rag.data.corpus import load_corpus
from rag.index.spec import IndexSpec
from rag.index.store import build_and_save, load_index, verify_index
from rag.index.versions import MANIFEST, READERS, IndexCorrupt, manifest_digest, sha256_file

D = 384  # full width: pca is the identity, nothing to fit


@pytest.fixture
def built(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, t in enumerate(["embedding tables map ids to vectors", "FAISS builds indexes", "BM25 scores terms"]):
        (folder / f"doc{i}.md").write_text(f"# Topic {i}\n\n{t}. " * 3)
    corpus = load_corpus(str(folder))
    m = build_and_save(corpus, IndexSpec("minilm", D, "flat"))
    return corpus, Path(m["path"]), Path(m["path"]).resolve()


def reseal(version: Path, edit) -> None:
    """What a careful attacker with write access does: edit, recompute every checksum and the unkeyed seal."""
    m = json.loads((version / MANIFEST).read_text())
    edit(m)
    m["manifest_sha256"] = manifest_digest(m)
    (version / MANIFEST).write_text(json.dumps(m))


def refused(corpus, link, message):
    with pytest.raises(IndexCorrupt, match="rebuild") as error:
        load_index(corpus, IndexSpec("minilm", D, "flat"))
    assert message in str(error.value)
    assert verify_index(link)["status"] == "corrupt"


@pytest.mark.parametrize("entry", ["/etc/passwd", "../../../../etc/passwd", "sub/../../x", "./index.faiss"])
def test_manifest_entries_must_stay_inside_the_version(built, entry):
    corpus, link, version = built
    reseal(version, lambda m: m["files"].update({entry: sha256_file(Path("/etc/passwd"))}))
    refused(corpus, link, "which is not a file inside the version")


def test_a_version_link_pointing_outside_is_refused(built, tmp_path):
    corpus, link, version = built
    outside = tmp_path / "elsewhere"
    os.rename(version, outside)
    link.unlink()
    os.symlink(outside, link)
    refused(corpus, link, "points outside its index folder")


def test_verify_checks_the_reader_lock_search_takes(built):
    corpus, link, version = built
    (version / READERS).unlink()
    (version / READERS).mkdir()
    refused(corpus, link, ".readers is not a plain file")


def test_a_keyed_seal_refuses_a_manifest_resealed_without_the_key(built, monkeypatch, tmp_path):
    corpus, link, version = built
    monkeypatch.setenv("RAG_INDEX_KEY", "operator-secret-" + "x" * 16)
    refused(corpus, link, "no keyed seal and RAG_INDEX_KEY is set")  # an unkeyed index is not trusted with a key set
    keyed = tmp_path / "keyed"
    keyed.mkdir()
    (keyed / "a.md").write_text("# A\n\nFlywheels store rotational energy. " * 3)
    keyed_corpus = load_corpus(str(keyed))
    m = build_and_save(keyed_corpus, IndexSpec("minilm", D, "flat"))
    keyed_version = Path(m["path"]).resolve()
    assert json.loads((keyed_version / MANIFEST).read_text())["seal"] == "hmac-sha256"
    assert load_index(keyed_corpus, IndexSpec("minilm", D, "flat")).manifest["vectors"] >= 1
    reseal(keyed_version, lambda m: m.update(seal="hmac-sha256", vectors=m["vectors"]))  # sha256, not the HMAC
    with pytest.raises(IndexCorrupt, match="fails its own HMAC-SHA256 seal"):
        load_index(keyed_corpus, IndexSpec("minilm", D, "flat"))
    monkeypatch.delenv("RAG_INDEX_KEY")
    with pytest.raises(IndexCorrupt, match="sealed with RAG_INDEX_KEY"):
        load_index(keyed_corpus, IndexSpec("minilm", D, "flat"))


def test_a_deeply_nested_manifest_is_corrupt_and_the_listing_goes_on(built):
    """A manifest of 100,000 nested arrays is an IndexCorrupt naming the index, not a RecursionError, and
    `rag index list` still lists the other indexes."""
    from rag.index.store import list_indexes

    corpus, link, version = built
    other = build_and_save(corpus, IndexSpec("minilm", 64, "flat"))
    (version / MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    refused(corpus, link, "nests deeper")
    assert [m["path"] for m in list_indexes()] == [other["path"]]
