"""The learned span reader: windows, the committed weights through ONNX Runtime, and every bad input the answer
must survive (no passages, blank passages, no answerable span, a span across a window boundary, another language)."""

from __future__ import annotations

import re

import pytest

from rag.answer.code_blocks import code_block
from rag.answer.llm import ExtractiveBackend
from rag.answer.reader import (
    MAX_TOKENS,
    WEIGHTS,
    featurize,
    reader_available,
    sentence_around,
    trim,
)
from rag.answer.reading import NOT_FOUND, is_how_to, other_language, read_answer
from rag.models import minilm_tokenizer
from rag.training.reader_fit import answer_tokens

ALIBI = (
    "Attention with Linear Biases (ALiBi), proposed by Press, Smith and Lewis (2022), adds no position vectors at "
    "all. Instead it adds a fixed penalty to each attention score that grows linearly with the distance between "
    "query and key."
)
FILLER = "The committee met again in the spring to discuss the budget of the regional library and its archives. "

needs_reader = pytest.mark.skipif(not reader_available(), reason="reader weights or onnxruntime missing")


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The committed reader, exported once into the test cache (RAG_TEST_CACHE_DIR) like the query encoder."""
    from rag.answer.reader import get_reader

    return get_reader(WEIGHTS)


def passages(*texts):
    return [{"n": i + 1, "id": f"p{i}", "title": f"t{i}", "text": t, "score": 1.0} for i, t in enumerate(texts)]


def test_windows_cover_a_long_passage_with_overlap_and_offsets():
    tok = minilm_tokenizer()
    text = FILLER * 40
    windows = featurize(tok, "What did the committee discuss?", [text])
    assert len(windows) > 1 and all(len(w.input_ids) <= MAX_TOKENS for w in windows)
    for w in windows:
        spans = [o for o in w.offsets if o is not None]
        assert w.input_ids[0] == 101 and w.input_ids[-1] == 102
        assert text[spans[0][0] : spans[-1][1]].strip()  # offsets point into the passage
    first_end = [o for o in windows[0].offsets if o][-1][1]
    second_start = [o for o in windows[1].offsets if o][0][0]
    assert second_start < first_end  # neighbouring windows overlap (STRIDE)


def test_a_span_across_a_window_boundary_is_whole_in_the_next_window():
    tok = minilm_tokenizer()
    question = "Who proposed ALiBi?"
    text = FILLER * 9 + ALIBI
    answer = "Press, Smith and Lewis"
    start = text.index(answer)
    windows = featurize(tok, question, [text])
    labels = [answer_tokens(w, start, start + len(answer)) for w in windows]
    cut = [
        w
        for w in windows
        if [o for o in w.offsets if o][0][0] < start < [o for o in w.offsets if o][-1][1] < start + len(answer)
    ]
    whole = [(w, lab) for w, lab in zip(windows, labels) if lab != (0, 0)]
    assert whole, "the answer must sit whole in some window"
    for w, (a, b) in whole:
        assert text[w.offsets[a][0] : w.offsets[b][1]] == answer
    assert all(lab == (0, 0) for w, lab in zip(windows, labels) if w in cut)  # a cut window is labelled [CLS]


def test_trim_and_sentence_around():
    text = "First sentence here. The answer is Press, Smith and Lewis, who wrote it. Last one."
    a = text.index("Press")
    s, e = trim(text, a - 1, a + len("Press, Smith and Lewis,"))
    assert text[s:e] == "Press, Smith and Lewis"
    left, right = sentence_around(text, s, e)
    assert text[left:right] == "The answer is Press, Smith and Lewis, who wrote it."


def test_language_and_how_to_detection():
    assert other_language("Внимание с линейными смещениями добавляет штраф к каждому счёту внимания.")
    assert other_language(
        "Die Aufmerksamkeit mit linearen Verzerrungen fügt jedem Aufmerksamkeitswert eine feste Strafe hinzu, die "
        "linear mit dem Abstand zwischen Anfrage und Schlüssel wächst, und sie braucht keine Positionsvektoren."
    )
    assert not other_language(ALIBI) and not other_language(FILLER * 3)
    assert is_how_to("How do I install Zephyr with HTTP/2 support?")
    assert not is_how_to("What is HNSW?")


def test_how_to_answers_with_the_code_block_intact():
    text = "## Install\n\nInstall Zephyr with HTTP/2 support:\n\n```bash\npip install 'zephyr[http2]'\n```\n\nDone."
    block = code_block("How do I install Zephyr with HTTP/2 support?", passages(FILLER, text))
    assert block and block[2] == "```bash\npip install 'zephyr[http2]'\n```"
    answer = read_answer(None, "How do I install Zephyr with HTTP/2 support?", passages(FILLER, text))
    assert "pip install 'zephyr[http2]'" in answer.text and answer.text.rstrip().endswith("[2]")
    assert answer.spans[0]["id"] == "p1" and text[answer.spans[0]["start"] : answer.spans[0]["end"]].startswith("```")


@needs_reader
def test_reader_finds_the_span_and_its_sentence(reader):
    spans = reader.read("Who proposed ALiBi?", [FILLER, ALIBI])
    assert spans and spans[0].passage == 1 and "Press" in spans[0].text
    result = read_answer(reader, "Who proposed ALiBi?", passages(FILLER, ALIBI))
    assert result.found and "Press, Smith and Lewis" in result.text and result.text.endswith("[2]")
    span = result.spans[0]
    assert ALIBI[span["start"] : span["end"]] == span["text"]


@needs_reader
def test_a_passage_reads_the_same_alone_as_beside_others_and_from_the_cache():
    """A window's logits do not depend on the windows read with it, nor on whether they were cached (an int8 model
    run on a padded batch would fail this: it quantizes a run's activations with one scale)."""
    from rag.answer.reader import Reader

    alone = Reader().read("Who proposed ALiBi?", [ALIBI])[0]
    fresh = Reader()
    beside = [sp for sp in fresh.read("Who proposed ALiBi?", [FILLER * 5, ALIBI, FILLER]) if sp.passage == 1][0]
    cached = [sp for sp in fresh.read("Who proposed ALiBi?", [FILLER, ALIBI]) if sp.passage == 1][0]
    assert (alone.text, alone.score, alone.null) == (beside.text, beside.score, beside.null)
    assert (alone.text, alone.score, alone.null) == (cached.text, cached.score, cached.null)


@needs_reader
def test_reader_finds_a_span_across_a_window_boundary(reader):
    text = FILLER * 9 + ALIBI
    spans = reader.read("Who proposed ALiBi?", [text])
    assert spans and "Press" in spans[0].text and text[spans[0].start : spans[0].end] == spans[0].text


@needs_reader
@pytest.mark.parametrize(
    "texts",
    [
        [],
        ["", "   \n\t "],
        [FILLER * 2],
        ["Внимание с линейными смещениями (ALiBi) предложили Пресс, Смит и Льюис в 2022 году; модель добавляет штраф."],
    ],
    ids=["no passages", "blank passages", "no answerable span", "another language"],
)
def test_bad_input_says_not_found_with_the_closest_citation(reader, texts):
    fallback = ExtractiveBackend().sentence_answer  # the backend's own fallback: sentences that share words
    result = read_answer(reader, "How many heads did the ALiBi paper use in 2022?", passages(*texts), fallback=fallback)
    assert not result.found and result.text.startswith(NOT_FOUND)
    assert not re.search(r"\d", re.sub(r"\[\d+\]", "", result.text))  # never a made-up number
    if any(t.strip() for t in texts):
        assert "[1]" in result.text  # the closest passage is cited


def test_a_definition_question_gets_the_sentence_that_says_what_x_is():
    from rag.answer.reading import definition_sentence, definition_target

    hnsw = passages(
        "For collections that fit in memory and need high recall at low latency on a CPU, HNSW is usually the first "
        "approximate index to try.",
        "Hierarchical Navigable Small World graphs (Malkov and Yashunin, 2016) link each vector to a set of near "
        "neighbours and search by greedy walking.",
    )
    hnsw[0]["title"], hnsw[1]["title"] = "HNSW Graph Indexes — When to choose it", "HNSW Graph Indexes — How it works"
    sentence, p = definition_sentence("What is HNSW?", hnsw)
    assert sentence.startswith("Hierarchical Navigable Small World") and p["n"] == 2
    alibi = definition_sentence("What is ALiBi?", passages(FILLER, ALIBI))
    assert alibi and alibi[0].startswith("Attention with Linear Biases (ALiBi)")
    assert definition_target("What is the vocabulary size of SmolLM2 and its width?") is None
    assert definition_sentence("What is HNSW?", passages(FILLER)) is None


def test_a_two_hop_answer_is_read_in_pairs_and_mapped_back_to_its_passage():
    """After a second hop, PairReader reads passages joined in pairs; every span it returns is the text at its
    offsets in its own passage, and the answer that needs both passages comes from the second."""
    from rag.answer.reader import default_reader
    from rag.answer.reading import PairReader

    texts = [
        "Mira Kell is an Irish singer. She is the lead singer of the rock band Glass Harbour.",
        "Glass Harbour is a rock band from Dublin. The band was formed in 1997 and has released four albums.",
        "Dublin is the capital of Ireland.",
    ]
    spans = PairReader(default_reader()).read("In what year was the band of singer Mira Kell formed?", texts)
    assert spans and all(texts[sp.passage][sp.start : sp.end] == sp.text for sp in spans)
    assert spans[0].passage == 1 and spans[0].text == "1997"
    assert PairReader(default_reader()).read("Who sings?", texts[:1])  # one passage: read alone


def test_the_second_stage_trains_on_hotpotqa_pairs_it_is_never_evaluated_on():
    """--hotpot windows: two paragraphs joined as the PairReader joins them, the label on the answer, and none of
    the 300 HotpotQA queries (the 100 development and 200 held-out ones) among them."""
    from rag.answer.reading import PAIR_JOIN
    from rag.data.corpus import load_corpus
    from rag.training.reader_fit import hotpot_examples

    examples = hotpot_examples()
    evaluated = {q.text for q in load_corpus("hotpotqa").queries}
    assert len(examples) >= 300 and not {q for q, *_ in examples} & evaluated
    answered = [(t, s, e) for _, t, s, e in examples if s >= 0]
    assert all(PAIR_JOIN in t for t, *_ in answered)
    assert len(answered) < len(examples)  # two distractors joined: "not in this window"
    assert all(t[s:e].strip() == t[s:e] and t[s:e].lower() not in ("yes", "no") for t, s, e in answered)


@pytest.mark.parametrize("args", [["--soup"], ["--soup", "--init", "same.npz", "--out", "same.npz"]])
def test_a_soup_without_its_first_stage_is_refused_before_training(args, cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "same.npz").write_bytes(b"weights")
    result = cli(["train", "reader", "--hotpot", *args])
    assert result.exit_code != 0 and "--init" in result.output
    assert (tmp_path / "same.npz").read_bytes() == b"weights"  # nothing overwritten


def test_a_definition_carries_on_into_its_sequel_and_a_titled_section_opens_with_it():
    from rag.answer.reading import definition_sentence

    gate = passages(
        "Gated Linear Units (GLU) add no extra activation function at all. Instead they multiply one linear "
        "projection by the sigmoid of another, elementwise:\n\nGLU(x) = (xW) ⊗ σ(xV).\n\nLater variants swap the "
        "sigmoid."
    )
    sentence, _ = definition_sentence("What is GLU?", gate)
    assert sentence.endswith("by the sigmoid of another, elementwise:")  # a lead-in of 10 words or more is kept
    section = passages("Scale each row by its norm so that every vector has unit length before the dot product.")
    section[0]["title"] = "Similarity — Cosine normalisation"
    sentence, _ = definition_sentence("What is cosine normalisation?", section)
    assert sentence.startswith("Scale each row by its norm")


@needs_reader
def test_an_answerer_turned_off_is_not_asked(reader):
    text = "## Install\n\nInstall Zephyr with HTTP/2 support:\n\n```bash\npip install 'zephyr[http2]'\n```\n\nDone."
    question = "How do I install Zephyr with HTTP/2 support?"
    on = read_answer(reader, question, passages(FILLER, text))
    off = read_answer(reader, question, passages(FILLER, text), without=("code",))
    assert on.text.startswith("Install Zephyr with HTTP/2 support:\n\n```bash")  # the code answer: intro and block
    assert off.text != on.text  # the next answerer (the reader's span) answered instead
