"""A folder's parsed files are kept between loads (rag.data.parsed_cache): the passages are the same with and without
it, a file whose bytes change is parsed again even when its size and time stay, a damaged cache is ignored and
rewritten, and prune removes the cache of a folder that is gone."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from rag.data import ingest
from rag.data.corpus import load_folder
from rag.data.parsed_cache import ParsedFiles, orphans

PAGE = "# Install\n\nRun `pip install zephyr` to install it.\n\n## Configure\n\nSet `ZEPHYR_HOME` first.\n"
GUIDE = "Guide\n=====\n\nUse :class:`~zephyr.Client` to connect.\n\n.. note::\n\n   Close it with :meth:`close`.\n"


def folder_with_pages(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "install.md").write_text(PAGE)
    (folder / "guide.rst").write_text(GUIDE)
    return folder


def passages(corpus):
    return [p.as_dict() for p in corpus.passages]


def count_parses(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = ingest.parse_document

    def counting(path, raw, info):
        seen.append(path.name)
        return real(path, raw, info)

    monkeypatch.setattr("rag.data.corpus.parse_document", counting)
    return seen


def test_a_second_load_reads_the_cache_and_gives_the_same_passages(tmp_path, monkeypatch):
    folder = folder_with_pages(tmp_path)
    parses = count_parses(monkeypatch)
    first = load_folder(folder)
    assert sorted(parses) == ["guide.rst", "install.md"]
    second = load_folder(folder)
    assert sorted(parses) == ["guide.rst", "install.md"]  # nothing parsed again
    assert passages(second) == passages(first) and second.content_hash == first.content_hash
    assert any("Client" in p.text for p in second.passages)


def test_two_files_with_the_same_bytes_keep_their_own_titles(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("alpha-notes.txt", "beta-notes.txt"):
        (folder / name).write_text("Plain notes without a heading.\n")
    for _ in range(2):
        assert sorted(p.title for p in load_folder(folder).passages) == ["alpha notes", "beta notes"]


def test_a_changed_file_is_parsed_again_even_with_its_size_and_time_kept(tmp_path, monkeypatch):
    folder = folder_with_pages(tmp_path)
    load_folder(folder)
    page = folder / "install.md"
    before = page.stat()
    page.write_text(PAGE.replace("zephyr", "zyphre"))  # the same length
    os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert page.stat().st_size == before.st_size and page.stat().st_mtime_ns == before.st_mtime_ns
    parses = count_parses(monkeypatch)
    corpus = load_folder(folder)
    assert parses == ["install.md"]
    assert any("zyphre" in p.text for p in corpus.passages) and not any(
        "pip install zephyr" in p.text for p in corpus.passages
    )


@pytest.mark.parametrize(
    "damage",
    ["not json {", '{"stamp": 1, "files": []}', "WRONG-SHAPES"],
    ids=["not JSON", "wrong types", "entries of the wrong shape"],
)
def test_a_damaged_cache_is_ignored_and_rewritten(tmp_path, monkeypatch, damage):
    folder = folder_with_pages(tmp_path)
    first = load_folder(folder)
    cache = ParsedFiles(folder, "words")
    if damage == "WRONG-SHAPES":
        data = json.loads(cache.path.read_text())
        for entry in data["files"].values():
            entry["chunks"] = [["title", "not a list", None, 3]]
        damage = json.dumps(data)
    cache.path.write_text(damage)
    parses = count_parses(monkeypatch)
    again = load_folder(folder)
    assert sorted(parses) == ["guide.rst", "install.md"]
    assert passages(again) == passages(first)
    assert json.loads(cache.path.read_text())["folder"] == str(folder.resolve())


def test_prune_removes_the_cache_of_a_folder_that_is_gone(tmp_path, monkeypatch):
    from rag.index.update import prune

    monkeypatch.setenv("RAG_CACHE_DIR", str(tmp_path / "cache"))  # pruning must never touch the shared test cache
    folder = folder_with_pages(tmp_path)
    load_folder(folder)
    path = ParsedFiles(folder, "words").path
    assert path.exists() and path not in orphans()
    shutil.rmtree(folder)
    assert path in orphans()
    assert str(path) in prune(keep=1)["cache_removed"] and not path.exists()


def test_an_unusable_cache_folder_only_costs_the_parse(tmp_path, monkeypatch):
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAG_CACHE_DIR", str(blocker))
    folder = folder_with_pages(tmp_path)
    parses = count_parses(monkeypatch)
    first, second = load_folder(folder), load_folder(folder)
    assert passages(first) == passages(second) and len(parses) == 4  # parsed both times, nothing written
    assert blocker.read_text() == "not a folder"
