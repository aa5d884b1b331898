"""The calculator's formula table: every formula the corpus states, applied to the numbers a question gives; a
formula fires only when the question asks for its quantity and gives its numbers, and cites the passage stating it."""

from __future__ import annotations

import math
import pathlib
import re

import pytest

from rag.calculator.formulas import _VECTOR_SOURCES, FORMULAS, calculate, read_quantities

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "corpus"


@pytest.mark.parametrize(
    "question, kind, key, value",
    [
        (
            "How many FLOPs per token does training a 350M-parameter model cost?",
            "training_flops",
            "flops_per_token",
            2.1e9,
        ),
        ("Training compute for a 3B parameter model on 600 billion tokens?", "training_flops", "total_flops", 1.08e22),
        ("FLOPs per token to train a 2B model with gradient checkpointing?", "training_flops", "flops_per_token", 16e9),
        (
            "How many FLOPs does a forward pass of a 1.3B model take per token?",
            "forward_flops",
            "flops_per_token",
            2.6e9,
        ),
        ("How many training tokens are compute-optimal for a 3B-parameter model?", "optimal_tokens", "tokens", 6e10),
        ("Output softmax FLOPs per token with V = 32,000 and d = 2,048?", "output_flops", "forward_flops", 131_072_000),
        ("How many bytes of logits for B = 4, T = 1,024, V = 50,257 in fp32?", "logits", "bytes_fp32", 823_410_688),
        (
            "FLOPs per token per layer for d = 1024 and T = 2048?",
            "flops",
            "total_flops",
            24 * 1024**2 + 4 * 2048 * 1024,
        ),
        ("How much memory does fine-tuning a 2B-parameter model with AdamW need?", "training_memory", "bytes", 32e9),
        (
            "With mixed precision, how much training memory does a 500M parameter model need?",
            "training_memory",
            "bytes_per_param",
            16,
        ),
        ("Training memory of a 1B model with 8-bit Adam?", "training_memory", "bytes", 10e9),
        ("Training memory for a 1B model in pure bf16 without a master copy?", "training_memory", "bytes", 8e9),
        ("What d does the 1.5·√V rule give for a vocabulary of 20,000?", "sqrt_heuristic", "d", 212.13),
        ("What does the fourth root rule give for 10,000 categories?", "sqrt_heuristic", "d", 10.0),
        (
            "Parameters of a learned position table with context length 2,048 and d = 1,024?",
            "position_table",
            "params",
            2_097_152,
        ),
        ("For 4 million vectors, what nlist does the rule suggest?", "nlist", "nlist_high", 32_000),
        ("How big is a PQ code with m = 32 for 512-dimensional vectors?", "pq", "code_bytes", 32),
        ("Bytes per vector of an HNSW index with M = 16 at d = 768?", "vector_bytes", "bytes_per_vector", 3_200),
        ("Memory per vector for HNSW32 at d = 256?", "vector_bytes", "bytes_per_vector", 1_280),
        ("Memory per vector of HNSW with SQ8 codes, M = 16, d = 512?", "vector_bytes", "bytes_per_vector", 640),
        (
            "How much memory does a flat index of 2,000,000 vectors at d = 768 need?",
            "vector_bytes",
            "index_bytes",
            6_144_000_000,
        ),
        ("What is the memory of 10 million binary codes at d = 512?", "vector_bytes", "index_bytes", 640_000_000),
        ("Memory per vector of an IVF-Flat index at d = 128?", "vector_bytes", "bytes_per_vector", 520),
        ("How much memory does a 7B model take in bf16?", "bytes", "bytes_bf16", 14e9),
        ("Ratio of attention work to the rest at T = 8,192 and d = 768?", "attention_ratio", "ratio", 1.7778),
        (
            "Multiply-adds of a brute-force query over 1,000,000 vectors at d = 384?",
            "search_cost",
            "multiply_adds",
            384e6,
        ),
        (
            "Cost of a one-hot product with V = 32,000 and d = 512 in multiply-adds?",
            "one_hot",
            "multiply_adds",
            16_384_000,
        ),
        ("How many parameters do 24 layers with d = 2048 hold?", "block_params", "params", 24 * 12 * 2048**2),
        ("What is the perplexity of a model with a loss of 3.5 nats?", "perplexity", "perplexity", 33.1155),
        ("What loss corresponds to a perplexity of 12?", "perplexity", "loss_nats", 2.4849),
    ],
)
def test_each_formula_applies_to_the_questions_numbers(question, kind, key, value):
    check(question, kind, key, value)


def check(question: str, kind: str, key: str, value: float, rel: float = 1e-4) -> None:
    """The formula `kind` answers the question, and its `key` value is `value`."""
    result = calculate(question)
    assert result is not None and result.kind == kind, result and result.text
    assert result.values[key] == pytest.approx(value, rel=rel), result.text


@pytest.mark.parametrize(
    "question",
    [
        "What does the rule of thumb say about training compute for a 13B-parameter model?",  # 6·N, not √V
        "Is there a rule of thumb for the parameters of a 7B model's embedding?",
    ],
)
def test_a_rule_of_thumb_about_compute_or_parameters_is_not_the_sqrt_rule(question):
    result = calculate(question)
    assert result is None or result.kind != "sqrt_heuristic", result.text


@pytest.mark.parametrize(
    "question",
    [
        "How much memory per vector does an HNSW index use?",  # no d, no M
        "What is the rule of thumb for choosing d?",
        "How much memory does training with Adam take?",
        "How does perplexity depend on the tokenizer?",
        "How many FLOPs does training cost per token?",
        "What is the code size of product quantization?",
    ],
)
def test_no_figure_without_the_numbers(question):
    assert calculate(question) is None


def test_numbers_are_read_however_they_are_written():
    assert read_quantities("a 7-billion-parameter model")["N"] == 7e9
    assert read_quantities("N = 7 × 10⁹ on D = 2e12 tokens") == {"N": 7e9, "D": 2e12}
    assert read_quantities("HNSW32 over 1.5M vectors of 384 dimensions") == {"M": 32, "n": 1.5e6, "d": 384}
    assert read_quantities("m = 48 sub-vectors, d=768")["m"] == 48


def test_every_formula_cites_a_passage_of_the_corpus_that_states_it():
    text = "\n".join(p.read_text() for p in CORPUS.glob("*.md"))
    for f in FORMULAS:
        assert re.search(f.cite, text), f.kind
    for kind, source in _VECTOR_SOURCES.items():
        assert re.search(source["cite"], text), kind


def test_each_index_kind_cites_its_own_passage():
    assert calculate("Bytes per vector of HNSW with M = 16 at d = 768?").cite == r"2·M·4"
    assert calculate("Bytes per vector of binary codes at d = 1024?").cite == r"d/8 bytes"


def test_the_calculator_cites_the_passage_that_states_its_formula():
    from rag.agent.nodes import calc_source

    calc = {"topic": calculate("FLOPs per token to train a 1B model?").topic, "cite": r"6·N"}
    uses = {
        "n": 1,
        "title": "Training compute budget",
        "text": "Training compute per token, forward and backward FLOPs, grows with the model.",
    }
    states = {"n": 2, "title": "Scaling", "text": "Forward and backward together cost C ≈ 6·N FLOPs per token."}
    assert calc_source(calc, [uses, states])["n"] == 2
    assert calc_source({**calc, "cite": r"nowhere"}, [uses, states])["n"] == 1  # none states it: the best topic match


def test_a_formula_that_leaves_a_given_number_unused_does_not_answer():
    """A formula answers only a question whose every number it reads or states: Adam's 16 bytes per parameter is no
    answer to "7B on 2 trillion tokens at 40% of 989 TFLOP/s"."""
    from rag.calculator.formulas import unused_numbers

    assert (
        calculate(
            "About how many device-hours would it take to train a 7B model on 2 trillion tokens at 40% "
            "utilisation of a 989 TFLOP/s accelerator?"
        )
        is None
    )
    per_word = calculate(
        "If my tokenizer averages 1.3 tokens per word and the per-token loss is 2.0 nats, what is the perplexity per "
        "word?"
    )  # the tokens per word are read: exp(2.0 · 1.3), not exp(2.0)
    assert per_word is not None and per_word.values["perplexity"] == pytest.approx(math.exp(2.6), rel=1e-4)
    hnsw = calculate("How many bytes per vector does an HNSW index with M = 32 use for 384-dimensional vectors?")
    assert hnsw is not None and "1,792" in hnsw.text  # d is read, though the sentence does not repeat it
    # numbers inside names, ranks and exponents are not numbers the question gives
    assert unused_numbers("How big is GPT-2's table in fp32 at top-10, 2^16 rows?", "65,536 rows") == []
    assert unused_numbers("A 7B model in bf16 for 40% of the time", "7,000,000,000 parameters; 0.4") == []


def test_worded_counts_and_both_d_rules():
    """ "about a million vectors" is n = 1,000,000; a question naming both rules of thumb gets both figures."""
    nlist = calculate("I have about a million vectors for an IVF index. How should I choose nlist?")
    assert nlist is not None and nlist.kind == "nlist" and "between about 1,000 and 16,000" in nlist.text
    both = calculate("For a vocabulary of 50,000 items, which gives a smaller d, 1.5·√V or the fourth-root rule?")
    assert both is not None and "≈ 335" in both.text and "≈ 15.0" in both.text
    assert "the fourth-root rule gives the smaller d" in both.text


@pytest.mark.parametrize(
    "question, kind, key, value",
    [
        # BM25: the corpus's worked example is 7.60 at average length, 6.08 at twice it
        (
            "In a corpus of 5,000 documents a term occurs in 40 of them; with k1 = 1.2 and b = 0.75 what BM25 score "
            "does it add for a document that is twice the average length and contains it 2 times?",
            "bm25",
            "score",
            math.log((5000 - 40 + 0.5) / 40.5 + 1) * 2 * 2.2 / (2 + 1.2 * 1.75),
        ),
        (
            "BM25 weight of a word found in 10 docs of N = 1000, tf = 3, document of average length?",
            "bm25",
            "score",
            math.log(990.5 / 10.5 + 1) * 3 * 2.5 / 4.5,  # k₁ = 1.5 and b = 0.75: the defaults, said so
        ),
        ("What BM25 IDF does a term in 50 of N = 10,000 documents get?", "bm25", "idf", math.log(9950.5 / 50.5 + 1)),
        (
            "A collection of 2,000 passages: 'retrieval' is found in 40 and 'of' in 1,900. How much more IDF weight "
            "does 'retrieval' get?",
            "idf",
            "ratio",
            math.log(50) / math.log(2000 / 1900),
        ),
        (
            "Graded labels 2, 0, 3, 0, 1 for my top 5: what nDCG@5 with the usual exponential gain?",
            "ndcg",
            "ndcg",
            (3 + 7 / 2 + 1 / math.log2(6)) / (7 + 3 / math.log2(3) + 1 / 2),
        ),
        ("What nDCG@10 does a single relevant document ranked at position 4 give?", "ndcg", "ndcg", 1 / math.log2(5)),
        ("MRR over three queries whose first relevant ranks are 2, none and 5?", "reciprocal_rank", "mrr", 0.7 / 3),
        ("Reciprocal rank when the first relevant passage sits at rank 8?", "reciprocal_rank", "rr", 0.125),
        (
            "There are 5 relevant documents and my top 20 contains 4 of them. What is recall@20?",
            "recall_precision",
            "recall",
            0.8,
        ),
        ("RRF score with k = 60 for a passage ranked 2nd by BM25 and 7th by dense?", "rrf", "rrf", 1 / 62 + 1 / 67),
        (
            "Reciprocal rank fusion score if BM25 ranks a document first and dense ranks it fourth?",
            "rrf",
            "rrf",
            1 / 61 + 1 / 64,
        ),
    ],
)
def test_each_ranking_formula_applies_to_the_questions_numbers(question, kind, key, value):
    check(question, kind, key, value, rel=1e-3)


@pytest.mark.parametrize(
    "question",
    [
        "What's the usual default for the b parameter in BM25?",  # a fact the passage states, not a computation
        "How does BM25 score a document?",
        "What is the recall of HNSW with efSearch = 64 on 1M vectors?",  # ANN recall: no formula for it
        "How is nDCG@10 computed?",
        "Why does RRF use k = 60?",  # a rank is needed
        "What is MRR?",
    ],
)
def test_no_ranking_figure_without_the_numbers(question):
    assert calculate(question) is None, calculate(question).text


def test_ranking_sentences_state_every_number_they_read():
    result = calculate("My top ten have relevance labels 3,2,0,1,0,0,2,0,0,0. What is nDCG@10?")
    assert "3, 2, 0, 1, 0, 0, 2, 0, 0, 0" in result.text and "≈ 0.954" in result.text
    result = calculate("BM25 with k1=1.5, b=0.75, N=1000, n=10, f=3, |D| = 2·avgdl: the term's score?")
    assert result.text.endswith("≈ 6.08.") and "|D|/avgdl = 2" in result.text


@pytest.mark.parametrize(
    "question, kind, key, value",
    [
        (
            "A learned position table for three thousand and seventy-two positions at a width of 1024: how many "
            "parameters?",
            "position_table",
            "params",
            3072 * 1024,
        ),
        (
            "MRR@10 for three queries whose first relevant results sit at rank three, nowhere in the top ten and "
            "rank one?",
            "reciprocal_rank",
            "mrr",
            (1 / 3 + 0 + 1) / 3,
        ),
        (
            "Two unit vectors have cosine 0.6: what is their squared Euclidean distance?",
            "unit_distance",
            "squared_distance",
            0.8,
        ),
        ("Normalized embeddings at an L2 distance of 0.5: what cosine similarity?", "unit_distance", "cos", 0.875),
        ("Bytes of a 64k-vocab table at width 2048 in fp16?", "bytes", "bytes_fp16", 64_000 * 2048 * 2),
    ],
)
def test_numbers_in_words_and_more_forms(question, kind, key, value):
    check(question, kind, key, value)


def test_number_words_read_as_digits_but_not_one_hot_or_which_one():
    from rag.calculator.number_words import digits

    assert (
        digits("two thousand and forty-eight positions, rank one, twenty-one layers")
        == "2048 positions, rank 1, 21 layers"
    )
    assert digits("which one is a one-hot vector, two-tower model") == "which one is a one-hot vector, two-tower model"
    assert digits("two three") == "two three"  # not one number


def test_a_question_about_a_quality_gap_is_not_about_bytes():
    assert calculate("PCA versus truncation at 64 dims: how large is the nDCG@10 gap between them?") is None
    assert calculate("Cosine 0.9 between two vectors: their distance?") is None  # unit length not said: no identity


@pytest.mark.parametrize(
    "question, kind, key, value",
    [
        (
            "RRF score (k = 60) of a document that comes 4th in both the BM25 and the dense ranking?",
            "rrf",
            "rrf",
            2 / 64,
        ),
        ("RRF for a passage ranked first in all three lists?", "rrf", "rrf", round(3 / 61, 6)),
        (
            "Four queries: first relevant hit at rank 1, rank 2, rank 4, and one query with nothing relevant in the "
            "top 10. What is MRR@10?",
            "reciprocal_rank",
            "mrr",
            (1 + 0.5 + 0.25 + 0) / 4,
        ),
        (
            "A tokenizer gives 1.5 tokens per word and the per-token loss is 2.0 nats: what is the per-word "
            "perplexity?",
            "perplexity",
            "perplexity",
            round(math.exp(3.0), 4),
        ),
    ],
)
def test_the_same_rank_in_every_list_a_query_with_nothing_and_tokens_per_word(question, kind, key, value):
    check(question, kind, key, value)


def test_sizes_keep_three_significant_figures_or_four_when_exact():
    from rag.calculator.formulas import fmt_bytes

    sizes = (40_960_000, 76_800_000, 56_623_104, 1_048_576_000, 8_388_608_000, 999_999, 1536, 999)
    assert [fmt_bytes(n) for n in sizes] == [
        "40.96 MB",
        "76.8 MB",
        "56.6 MB",
        "1.05 GB",
        "8.39 GB",
        "1 MB",
        "1.536 kB",
        "999 bytes",
    ]
    assert "40.96 MB" in calculate("Vocab 20,000, dim 512: how many MB does the table take in fp32?").text


def test_alibi_penalty_and_softmax_factor_from_slope_and_distance():
    check(
        "In ALiBi, for a head with slope 1/2, what factor is applied to the softmax weight of a key 10 positions back?",
        "alibi",
        "factor",
        math.exp(-5),
    )
    check("ALiBi with slope 0.25: how much is a key 8 tokens away down-weighted?", "alibi", "penalty", 2.0)
    for question in ("What is ALiBi?", "ALiBi slope 1/0 for a key 3 tokens back?", "ALiBi vs RoPE for long inputs?"):
        assert calculate(question) is None, question
