"""Comparison questions answer with the sentence that states both figures, preferring one naming both sides; when
none does, one sentence per side, so both numbers are given. Table rows count as sentences."""

from __future__ import annotations

import pytest

from rag.answer.comparison import compare, sides

SIZES = {
    "n": 1,
    "id": "sizes.md#3",
    "title": "Index Sizes — At a glance",
    "text": "Sizes for d = 256.\n\n| index | bytes per vector |\n|---|---|\n| Flat | 1,024 |\n| Scalar 8-bit | 256 |\n"
    "| Binary | 32 |",
}
RERANK = {
    "n": 2,
    "id": "rerank.md#1",
    "title": "Rerankers — Results",
    "text": "Cross-encoders are slow. On TREC-COVID the cross-encoder reached nDCG@10 0.71 against 0.59 for BM25. "
    "BM25 is fast.",
}
SPARSE = {"n": 3, "id": "sparse.md#1", "title": "Sparse", "text": "BM25 reached MRR 0.31 on the dev set."}
DENSE = {"n": 4, "id": "dense.md#1", "title": "Dense", "text": "The dual encoder reached MRR 0.37 on the dev set."}


@pytest.mark.parametrize(
    "question, a, b",
    [
        (
            "How much better is the cross-encoder than BM25 on TREC-COVID?",
            ["cross-encoder", "cross", "encoder"],
            ["bm25"],
        ),
        ("Which is smaller per vector, Binary or Flat?", ["binary"], ["flat"]),
        ("How does BM25 compare with the dual encoder on MRR?", ["bm25"], ["dual", "encoder"]),
        ("BM25 vs the dual encoder: which has the higher MRR?", ["bm25"], ["dual", "encoder"]),
    ],
)
def test_the_sides_of_a_comparison(question, a, b):
    assert sides(question)[:2] == (a, b)


def test_not_a_comparison():
    assert sides("What is BM25?") is None and compare("What is BM25?", [SPARSE]) is None


def test_the_sentence_naming_both_sides_with_both_figures_wins():
    got = compare("How much worse is BM25 than the cross-encoder on TREC-COVID?", [SPARSE, RERANK])
    assert got["sentence"].startswith("On TREC-COVID the cross-encoder reached nDCG@10 0.71 against 0.59")


def test_a_table_row_per_side_gives_both_numbers():
    got = compare("Which takes fewer bytes per vector, Binary or Flat?", [RERANK, SIZES])
    assert "Binary: bytes per vector 32." in got["sentence"] and "Flat: bytes per vector 1,024." in got["sentence"]


def test_sides_stated_in_two_passages_are_both_cited():
    got = compare("Which has the higher MRR, BM25 or the dual encoder?", [SPARSE, DENSE])
    assert (
        got["sentence"] == "BM25 reached MRR 0.31 on the dev set. [3] The dual encoder reached MRR 0.37 on the dev set."
    )
    assert got["passage"]["n"] == 4


def test_without_a_figure_for_each_side_the_readers_answer_stands():
    cheap = {"n": 1, "id": "c.md#0", "title": "Lookups", "text": "Static vectors are cheap: no network runs."}
    assert compare("Which is faster, static vectors or a transformer encoder?", [cheap]) is None


def test_a_digit_inside_a_name_is_not_a_figure():
    prose = {"n": 1, "id": "q.md#0", "title": "Q", "text": "SQ8 saves memory, and is often faster than Flat search."}
    table = {**SIZES, "n": 2, "text": SIZES["text"].replace("Scalar 8-bit", "SQ8")}
    got = compare("Which takes less memory per vector, SQ8 or Flat?", [prose, table])
    assert got["sentence"] == "SQ8: bytes per vector 256. Flat: bytes per vector 1,024."


def test_a_side_may_be_named_by_its_initials():
    p = {"n": 1, "id": "f.md#2", "title": "Fusion", "text": "RRF reached 0.69 and min-max fusion reached 0.71."}
    got = compare("Which scores higher, min-max fusion or reciprocal rank fusion?", [p])
    assert got["sentence"] == "RRF reached 0.69 and min-max fusion reached 0.71."


@pytest.mark.parametrize(
    "question, a, b",
    [
        ("Which did better in the reference run: plain BM25 or the dense encoder?", ["bm25"], ["dens", "encoder"]),
        (
            "Cutting vectors to 32 dims: PCA or plain truncation, which keeps more quality?",
            ["pca"],
            ["truncation"],
        ),
        ("Between whitening and all-but-the-top, which is milder?", ["whiten"], ["all-but-the-top", "top"]),
        ("bf16 vs fp16 - which has the bigger range?", ["bf16"], ["fp16"]),
    ],
)
def test_options_before_which_after_a_colon_or_between(question, a, b):
    assert sides(question)[:2] == (a, b)


def test_a_sentence_that_states_the_comparison_answers_without_figures():
    p = {
        "n": 1,
        "id": "p.md#3",
        "title": "Post-processing — Relation to whitening",
        "text": "Whitening or removing top directions are cheap steps. Cosine-normalised centering is gentler and "
        "needs fewer samples than whitening, because less must be estimated.",
    }
    other = {"n": 2, "id": "o.md#0", "title": "Anisotropy", "text": "Whitening and centering are both linear maps."}
    got = compare("Between whitening and cosine-normalised centering, which needs less data?", [other, p])
    assert got["sentence"].startswith("Cosine-normalised centering is gentler and needs fewer samples")


def test_the_figure_the_question_gives_picks_the_table_row():
    p = {
        "n": 1,
        "id": "r.md#4",
        "title": "Reduction — Reference figures",
        "text": "| d | PCA | truncation |\n|---|---|---|\n| 128 | 0.61 | 0.60 |\n| 64 | 0.54 | 0.48 |\n| 32 | 0.45 | 0.34 |",
    }
    got = compare("At 64 dimensions, which holds up better, PCA or truncation?", [p])
    assert got["sentence"].startswith("64:") and "0.54" in got["sentence"]
