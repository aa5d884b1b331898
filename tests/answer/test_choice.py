"""Questions that name their options answer with an option (or yes/no) that the options' own passages support;
without a passage for each option, or on a tie, they leave the answer to the reader (None). The passages are
written for these tests."""

from __future__ import annotations

import pytest

from rag.answer.choice import options_answer
from rag.answer.reading import options_read


def passage(n: int, title: str, text: str) -> dict:
    return {"n": n, "id": title, "title": title, "text": text}


MARLOW = passage(
    1, "Ada Marlow", "Ada Marlow (3 March 1921 – 8 June 1990) was a Canadian painter known for harbour scenes."
)
VOSS = passage(
    2, "Petra Voss", "Petra Voss (born 12 July 1934) is a German sculptor. She studied in Munich and lives in Berlin."
)
KESTREL = passage(
    3,
    "Kestrel Lane (band)",
    "Kestrel Lane is an American indie rock band formed in 1998 in Portland, Oregon. The band has five members.",
)
ORBITAL = passage(
    4,
    "The Orbital Choir",
    "The Orbital Choir was an English folk duo founded in 2004 in Leeds. It released three albums.",
)
FERN = passage(5, "Glimmerfern", "Glimmerfern is a genus of ferns in the family Pteridaceae, native to Chile.")
MOSS = passage(6, "Tallmoss", "Tallmoss is a genus of mosses found in wet forests of New Zealand.")


@pytest.mark.parametrize(
    "question, answer",
    [
        ("Who was born first, Ada Marlow or Petra Voss?", "Ada Marlow"),
        ("Who was born later, Ada Marlow or Petra Voss?", "Petra Voss"),
        ("Which artist was younger, Ada Marlow or Petra Voss?", "Petra Voss"),
        ("Which group was founded earlier, Kestrel Lane or The Orbital Choir?", "Kestrel Lane"),
        ("Which band, Kestrel Lane or The Orbital Choir, is from Oregon?", "Kestrel Lane"),
        ("Which of Ada Marlow and Petra Voss is a sculptor?", "Petra Voss"),
        ("Which act is English, Kestrel Lane or The Orbital Choir?", "The Orbital Choir"),
    ],
)
def test_a_choice_answers_with_the_option_its_passage_supports(question, answer):
    got = options_answer(question, [MARLOW, VOSS, KESTREL, ORBITAL])
    assert got is not None and got["kind"] == "choice" and got["answer"] == answer, got


@pytest.mark.parametrize(
    "question, answer",
    [
        ("Are Kestrel Lane and The Orbital Choir both American?", "no"),
        ("Are Kestrel Lane and The Orbital Choir both bands from the United States?", "no"),
        ("Are Glimmerfern and Tallmoss both genera?", "yes"),
        ("Are both Glimmerfern and Tallmoss genera of ferns?", "no"),
        ("Were Ada Marlow and Petra Voss of the same nationality?", "no"),
        ("Are Ada Marlow and Petra Voss from the same country?", "no"),
    ],
)
def test_both_and_same_questions_answer_yes_or_no(question, answer):
    got = options_answer(question, [MARLOW, VOSS, KESTREL, ORBITAL, FERN, MOSS])
    assert got is not None and got["kind"] == "yes/no" and got["answer"] == answer, got


def test_same_nationality_yes():
    a = passage(1, "Lena Holt", "Lena Holt (born 1960) is an American novelist.")
    b = passage(2, "Tom Reyes", "Tom Reyes (born 1955) is an American film director from Texas.")
    assert options_answer("Were Lena Holt and Tom Reyes of the same nationality?", [a, b])["answer"] == "yes"


@pytest.mark.parametrize(
    "question, passages",
    [
        ("Who was born first, Ada Marlow or Nobody Known?", [MARLOW, VOSS]),  # no passage for one option
        ("Which is taller, Ada Marlow or Petra Voss?", [MARLOW, VOSS]),  # nothing in the passages decides: a tie
        ("What did Ada Marlow paint?", [MARLOW]),  # not a question with options
        ("Which index is smaller, SQ8 or flat?", []),  # no passages at all
    ],
)
def test_no_decision_leaves_the_answer_to_the_reader(question, passages):
    assert options_answer(question, passages) is None


def test_the_answer_cites_and_marks_the_option_in_its_passage():
    got = options_answer("Who was born first, Ada Marlow or Petra Voss?", [MARLOW, VOSS])
    short = options_read(got, short=True)
    assert short.text == "Ada Marlow [1]" and short.spans[0]["start"] == 0 and short.spans[0]["text"] == "Ada Marlow"
    long = options_read(got, short=False)
    assert long.text.startswith("Ada Marlow. Ada Marlow (3 March 1921") and long.text.endswith("[1]")


@pytest.mark.parametrize(
    "shape",
    [
        lambda n: "Which " + "a, " * n + "x or y" + " z" * n,
        lambda n: "Are " + "a and " * n + "b both" + " c" * n + "!",
        lambda n: "Is " + "a or " * n + "b",
        lambda n: "Which of " + "a and " * n + "b has x",
        lambda n: "Are both " + "x and " * n + "?",
    ],
)
def test_long_or_adversarial_questions_take_no_time(shape):
    import time

    for n in (40, 2000):  # within and far beyond the length read for options (the service allows 8,000 characters)
        start = time.perf_counter()
        options_answer(shape(n)[:8000], [MARLOW, VOSS, KESTREL, ORBITAL])
        assert time.perf_counter() - start < 0.05


def test_a_comparative_without_a_comma_still_names_the_options():
    got = options_answer("who is younger Ada Marlow or Petra Voss ?", [MARLOW, VOSS])
    assert got is not None and got["answer"] == "Petra Voss", got


@pytest.fixture(scope="module")
def reader():
    from rag.answer.reader import default_reader

    return default_reader()


def test_a_tie_is_broken_by_the_reader_and_the_answer_is_still_an_option(reader):
    """Nothing in the words decides "which ... known for animation" (both passages say "known for"); the
    reader answers the question from Iver Dahl's passage, so the answer is that option, never a span."""
    dahl = passage(1, "Iver Dahl", "Iver Dahl (born 1971) is a Norwegian filmmaker known for short animated films.")
    brandt = passage(2, "Sofie Brandt", "Sofie Brandt (born 1969) is a Danish filmmaker known for documentaries.")
    question = "Which filmmaker was known for animation, Iver Dahl or Sofie Brandt?"
    assert options_answer(question, [dahl, brandt]) is None  # without a reader: a tie, as before
    got = options_answer(question, [dahl, brandt], reader)
    assert got is not None and got["kind"] == "choice" and got["answer"] == "Iver Dahl", got
    other = options_answer(question.replace("animation", "documentaries"), [dahl, brandt], reader)
    assert other is not None and other["answer"] == "Sofie Brandt", other  # the other way round: the other option


@pytest.mark.parametrize(
    "question, texts, answer",
    [
        (
            "Are Halden Tower and Brisk Hall located in the same district?",
            (
                "Halden Tower is an office tower in the Norrmalm district of Stockholm, Sweden.",
                "Brisk Hall is a concert hall in the Södermalm district of Stockholm, Sweden.",
            ),
            "no",
        ),
        (
            "Are Halden Tower and Brisk Hall located in the same district?",
            (
                "Halden Tower is an office tower in the Norrmalm district of Stockholm, Sweden.",
                "Brisk Hall is a concert hall in the Norrmalm district of Stockholm, Sweden, opened in 1931.",
            ),
            "yes",
        ),
    ],
)
def test_the_same_property_beyond_nationality_is_read_from_each_passage(reader, question, texts, answer):
    a, b = passage(1, "Halden Tower", texts[0]), passage(2, "Brisk Hall", texts[1])
    assert options_answer(question, [a, b]) is None  # without a reader nothing decides it
    got = options_answer(question, [a, b], reader)
    assert got is not None and got["kind"] == "yes/no" and got["answer"] == answer, got
