"""The streaming build (rag.index.stream_build) against the in-memory one, resume after an interruption, and its refusals.

A real synthetic corpus (wiki-lm sentences, rag.data.synth_corpus), the real SmolLM2 table encoder (mean pooling: the
encoder a streaming build of a million passages uses here), real FAISS, the real CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag.config import RagError, RagWarning
from rag.data.corpus import load_corpus
from rag.data.synth_corpus import write_synthetic_corpus
from rag.encoders import get_encoder
from rag.index.spec import IndexSpec
from rag.index.store import build_and_save, load_index
from rag.index.stream_build import BuildInterrupted, build_folder, stream_build

ENCODER = "smollm2-input-mean"
QUERIES = [
    "American film director and screenwriter",
    "a species of moth",
    "the village church and its tower",
    "a football club in the league",
    "a river in the north of the country",
]


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    """A 400-passage synthetic corpus (a BEIR folder)."""
    folder = tmp_path_factory.mktemp("synth") / "corpus"
    write_synthetic_corpus(folder, 400, seed=1)
    return folder


def top10(corpus, dim: int, kind: str):
    loaded = load_index(load_corpus(str(corpus)), IndexSpec(ENCODER, dim, kind))
    queries = loaded.reducer.transform(get_encoder(ENCODER).encode(QUERIES, kind="query"))
    scores, rows = loaded.index.search(queries, 10)
    return [[loaded.passages[r].id for r in row] for row in rows], scores


def test_streamed_flat_index_searches_like_the_in_memory_build(synth):
    streamed = stream_build(str(synth), IndexSpec(ENCODER, 64, "flat"), chunk=128)
    assert streamed["vectors"] == 400 and streamed["streamed"]["chunks"] == 4 and streamed["resumed_from"] == 0
    assert streamed["peak_rss_mb"] > 0
    ids_streamed, scores_streamed = top10(synth, 64, "flat")
    assert not build_folder(str(synth)).exists()  # the work folder goes once the version is sealed
    in_memory = build_and_save(load_corpus(str(synth)), IndexSpec(ENCODER, 64, "flat"))
    assert in_memory["corpus_hash"] == streamed["corpus_hash"]  # the streamed hash is Corpus.content_hash
    ids_memory, scores_memory = top10(synth, 64, "flat")
    assert ids_streamed == ids_memory
    np.testing.assert_allclose(scores_streamed, scores_memory, atol=1e-5)


@pytest.mark.parametrize("kind", ["flat", "ivf-flat"])
def test_a_resumed_build_equals_an_uninterrupted_one(synth, kind):
    whole = stream_build(str(synth), IndexSpec(ENCODER, 32, kind), chunk=100)
    with pytest.raises(BuildInterrupted):
        stream_build(str(synth), IndexSpec(ENCODER, 32, kind), chunk=100, stop_after=2)
    progress = json.loads((build_folder(str(synth)) / "progress.json").read_text())
    assert progress["encoded"] == 200 and progress["chunks"] == 2 and not progress["done"]
    done = []
    resumed = stream_build(
        str(synth),
        IndexSpec(ENCODER, 32, kind),
        chunk=100,
        resume=True,
        progress=lambda stage, n, total: done.append((stage, n)),
    )
    assert resumed["resumed_from"] == 200
    assert [n for stage, n in done if stage == "encoding"][0] == 300  # it went on with the third chunk
    assert resumed["files"] == whole["files"]  # index.faiss, passages.jsonl, reducer.npz, probe.npz: byte-equal


def test_resume_with_no_build_in_progress_says_so(synth, cli):
    result = cli(
        ["index", "build", "--corpus", synth, "--encoder", ENCODER, "--dim", 32, "--index", "flat", "--resume"]
    )
    assert result.exit_code == 1
    assert "--resume: no build in progress for corpus" in result.output and "without --resume" in result.output


@pytest.mark.parametrize(
    "option, value", [("--dim", "16"), ("--index", "sq8"), ("--encoder", "minilm"), ("--reduce", "whiten")]
)
def test_resume_with_other_settings_is_refused_naming_the_setting(synth, cli, option, value):
    with pytest.raises(BuildInterrupted):
        stream_build(str(synth), IndexSpec(ENCODER, 32, "flat"), chunk=100, stop_after=1)
    args = {"--encoder": ENCODER, "--dim": "32", "--index": "flat", "--reduce": "pca", option: value}
    result = cli(["index", "build", "--corpus", synth, *[x for kv in args.items() for x in kv], "--resume"])
    assert result.exit_code == 1
    assert "--resume refused: the build in progress at" in result.output
    assert f"has {option} " in result.output and f"asks for {option} {value}" in result.output
    assert json.loads((build_folder(str(synth)) / "progress.json").read_text())["encoded"] == 100  # left as it was


def test_resume_over_a_changed_corpus_is_refused(tmp_path):
    folder = tmp_path / "corpus"
    write_synthetic_corpus(folder, 250, seed=2)
    with pytest.raises(BuildInterrupted):
        stream_build(str(folder), IndexSpec(ENCODER, 32, "flat"), chunk=100, stop_after=1)
    lines = (folder / "corpus.jsonl").read_text().splitlines()
    lines[3] = json.dumps({"_id": "synth-0000003", "title": "Edited", "text": "An edited passage."})
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(RagError, match="changed since the build began"):
        stream_build(str(folder), IndexSpec(ENCODER, 32, "flat"), chunk=100, resume=True)
    with pytest.warns(RagWarning, match=r"discarded an unfinished build .* \(100 rows encoded\); pass --resume"):
        assert stream_build(str(folder), IndexSpec(ENCODER, 32, "flat"), chunk=100)["vectors"] == 250  # started over


def test_encoders_and_reducers_that_need_the_whole_corpus_are_refused(synth):
    with pytest.raises(RagError, match="learns corpus statistics.*smollm2-input-mean"):
        stream_build(str(synth), IndexSpec("smollm2-input", 32, "flat"))
    with pytest.raises(RagError, match="--reduce distill trains on pseudo-queries"):
        stream_build(str(synth), IndexSpec(ENCODER, 32, "flat", reduce="distill"))
    with pytest.raises(RagError, match="--index ivf-pq-rerank keeps every float vector.*refused before encoding"):
        stream_build(str(synth), IndexSpec(ENCODER, 32, "ivf-pq-rerank"))


def test_cli_streamed_build_then_search(synth, cli):
    built = cli(
        [
            "index",
            "build",
            "--corpus",
            synth,
            "--encoder",
            ENCODER,
            "--dim",
            48,
            "--index",
            "ivf-flat",
            "--stream",
            "--chunk",
            150,
            "--json",
        ]
    )
    assert built.exit_code == 0, built.output
    manifest = json.loads(built.output)
    assert manifest["vectors"] == 400 and manifest["streamed"]["chunks"] == 3
    found = cli(
        [
            "search",
            "an American film director",
            "--corpus",
            synth,
            "--encoder",
            ENCODER,
            "--dim",
            48,
            "--index",
            "ivf-flat",
            "--retriever",
            "dense",
            "--json",
        ]
    )
    assert found.exit_code == 0, found.output
    assert len(json.loads(found.output)["passages"]) > 0


def test_synthetic_corpus_is_seeded_and_checks_n(tmp_path):
    a = write_synthetic_corpus(tmp_path / "a", 50, seed=3)
    b = write_synthetic_corpus(tmp_path / "b", 50, seed=3)
    rows = [json.loads(line) for line in open(a["path"])]
    assert len(rows) == 50 and len({r["_id"] for r in rows}) == 50 and all(r["title"] and r["text"] for r in rows)
    assert open(a["path"]).read() == open(b["path"]).read()
    assert len(load_corpus(str(tmp_path / "a")).passages) == 50
    for bad in (0, -5, 2.5):
        with pytest.raises(RagError, match="--n must be a positive whole number"):
            write_synthetic_corpus(tmp_path / "c", bad)


def test_a_chunk_below_one_is_refused(synth, cli):
    result = cli(["index", "build", "--corpus", synth, "--encoder", ENCODER, "--dim", 32, "--stream", "--chunk", 0])
    assert result.exit_code == 1 and "--chunk must be a positive whole number of passages, got 0" in result.output
