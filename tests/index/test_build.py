"""rag.retrieve.build: the one way a stored index and the BM25 cache are built, and the parts each retriever reads.
Real folder corpus, real MiniLM, real FAISS and bm25s."""

from __future__ import annotations

import os

import pytest

from rag.config import RagError
from rag.retrieve import RETRIEVER_KINDS, RetrievalSettings
from rag.retrieve.build import (
    DENSE_PART,
    SPARSE_PART,
    STORED_PARTS,
    BuildMethod,
    build_stored,
    missing_parts,
    parts_read_by,
)


def test_each_retriever_kind_reads_the_parts_of_the_sides_it_runs():
    for kind in RETRIEVER_KINDS.values():
        parts = parts_read_by(kind)
        assert (DENSE_PART in parts) == kind.dense and (SPARSE_PART in parts) == kind.sparse
        assert list(parts) == [p for p in STORED_PARTS if p in parts]  # build order: the table's


def test_build_stored_builds_the_named_parts_and_missing_parts_says_what_is_left(tmp_path):
    from rag.data.corpus import load_corpus

    folder = tmp_path / "notes"
    folder.mkdir()
    marker = os.urandom(6).hex()  # content no cache has seen: both parts are really built here
    for i, topic in enumerate(("zeppelins", "lighthouses", "glaciers")):
        (folder / f"d{i}.md").write_text(f"# {topic.title()}\n\nNotes on {topic} and record {marker}{i}.\n")
    (folder / "table.xyz").write_text("not a document format")
    corpus = load_corpus(str(folder))
    settings = RetrievalSettings(corpus=str(folder), dim=16, index="flat").validated()  # hybrid: both sides
    hashed = []

    def content_hash():
        hashed.append(1)
        return corpus.content_hash

    assert next(missing_parts(settings, content_hash)) == DENSE_PART and not hashed  # the sparse side not looked at
    assert list(missing_parts(settings, content_hash)) == [DENSE_PART, SPARSE_PART]

    built = build_stored(corpus, settings.index_spec, (SPARSE_PART,))
    assert "vectors" not in built and built["corpus"] == corpus.name
    assert list(missing_parts(settings, content_hash)) == [DENSE_PART]

    stages, warned = set(), []
    built = build_stored(
        str(folder),
        settings.index_spec,
        (DENSE_PART,),
        progress=lambda stage, done, total: stages.add(stage),
        on_warning=warned.append,
    )
    assert built["vectors"] == len(corpus.passages) and built["dim"] == 16 and built["reused"] is False
    assert built["wall_s"] >= 0 and built["invalid_utf8"] == 0
    assert stages == {f"encoding {corpus.name} with minilm"}
    assert len(warned) == 1 and "unsupported extension" in warned[0]
    assert list(missing_parts(settings, content_hash)) == []
    dense_only = RetrievalSettings(corpus=str(folder), dim=16, index="flat", retriever="dense").validated()
    assert list(missing_parts(dense_only, content_hash)) == []


def test_an_unknown_part_or_engine_is_one_line_naming_the_choices():
    with pytest.raises(RagError, match="unknown stored part 'vectors'; choose from: index, sparse"):
        build_stored("builtin", parts=("vectors",))
    with pytest.raises(RagError, match="unknown --engine 'spark'; choose one of: local, ray"):
        build_stored("builtin", method=BuildMethod(engine="spark"))
