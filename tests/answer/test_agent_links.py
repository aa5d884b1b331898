"""The links a two-hop question follows (rag.answer.links), and the grader keeping a passage that the question's
subject links to, and the answer after a hop reading a linked passage first. The passages are written for these
tests."""

from __future__ import annotations

import pytest

from rag.agent.nodes import link_keeps
from rag.answer.links import anchors, chain, title_name
from rag.answer.reader import Span
from rag.answer.reading import MemoReader, PairReader, best_spans
from rag.data.corpus import Passage
from rag.retrieve.retriever import Hit

HEFFER = ("Ralph Hefferline", "Ralph Hefferline (1910 – 1974) was a psychology professor at Columbia University.")
COLUMBIA = ("Columbia University", "Columbia University is a private research university in New York City.")
VIRGINIA = ("E. Mavis Hetherington", "E. Mavis Hetherington is a retired psychology professor in Virginia.")
IT = ("It (novel)", "It is a 1986 horror novel by Stephen King.")


@pytest.mark.parametrize(
    "title, name",
    [("Kiss and Tell (1945 film)", "kiss and tell"), ("Columbia University", "columbia university"), ("", "")],
)
def test_a_title_is_read_without_its_disambiguation(title, name):
    assert title_name(title) == name


def test_the_chain_is_the_question_s_subject_and_what_it_links_to():
    titles, texts = zip(HEFFER, VIRGINIA, COLUMBIA)
    question = "Ralph Hefferline was a psychology professor at a university located in what city?"
    assert anchors(question, list(titles)) == [0]
    assert chain(question, list(titles), list(texts)) == {0, 2}  # not the other professor's passage


@pytest.mark.parametrize(
    "question, fallback, expected",
    [
        ("Where did the professor teach?", True, {0, 2}),  # no title named: the first passage is the anchor
        ("Where did the professor teach?", False, set()),
        ("Is it scary?", True, {0, 2}),  # a three-letter title is too short to count as named ("it")
    ],
)
def test_without_a_named_subject_the_first_passage_anchors_only_when_asked(question, fallback, expected):
    titles, texts = zip(HEFFER, VIRGINIA, COLUMBIA, IT)
    assert chain(question, list(titles), list(texts), fallback_first=fallback) == expected


def _found(*items: tuple[str, str, bool]) -> dict:
    return {
        title: {"hit": Hit(Passage(title, title, text, "test"), 1.0), "kept": kept, "overlap": 0.0}
        for title, text, kept in items
    }


def test_the_grader_keeps_the_passage_the_subject_links_to():
    found = _found((*HEFFER, True), (*COLUMBIA, False), (*VIRGINIA, False))
    question = "Ralph Hefferline was a psychology professor at a university located in what city?"
    assert link_keeps(question, found, ["Columbia University", "E. Mavis Hetherington"]) == ["Columbia University"]
    assert found["Columbia University"]["kept"]
    assert not found["E. Mavis Hetherington"]["kept"]


def test_no_subject_in_the_question_keeps_nothing_more():
    found = _found((*HEFFER, True), (*COLUMBIA, False))
    assert link_keeps("Where is the university located?", found, ["Columbia University"]) == []
    assert not found["Columbia University"]["kept"]


def test_another_paragraph_of_the_subject_s_own_article_is_not_a_link():
    found = _found(("Force", "A force is any interaction that changes the motion of an object.", True))
    found["Force#2"] = {
        "hit": Hit(Passage("Force#2", "Force", "Friction is a force that opposes motion.", "test"), 1.0),
        "kept": False,
        "overlap": 0.0,
    }
    assert link_keeps("What does a force change?", found, ["Force#2"]) == []


class FixedSpans(PairReader):
    """A reader that returns set spans: the unit under test is best_spans' ranking after a hop, not the reader."""

    def __init__(self, spans: list[Span]):
        self.spans = spans

    def read(self, question: str, texts: list[str]) -> list[Span]:
        return sorted(self.spans, key=lambda sp: -sp.margin)


def test_after_a_hop_a_sure_span_in_a_linked_passage_comes_first():
    passages = [
        {"n": i + 1, "id": title, "title": title, "text": text}
        for i, (title, text) in enumerate([HEFFER, VIRGINIA, COLUMBIA])
    ]
    question = "Ralph Hefferline was a psychology professor at a university located in what city?"
    anchor = Span(0, "Columbia University", 60, 79, score=20.0, null=-3.0)  # the bridge itself, surer
    distractor = Span(1, "Virginia", 55, 63, score=19.0, null=-3.0)
    linked = Span(2, "New York City", 55, 68, score=12.0, null=-2.0)
    ranked = best_spans(FixedSpans([anchor, distractor, linked]), question, passages)
    assert [sp.text for sp, _ in ranked] == ["New York City", "Columbia University", "Virginia"]
    unsure = Span(2, "New York City", 55, 68, score=1.0, null=2.0)  # below NULL_MARGIN: never first
    ranked = best_spans(FixedSpans([anchor, distractor, unsure]), question, passages)
    assert ranked[0][0].text == "Columbia University"
    without_hop = best_spans(MemoReader(FixedSpans([anchor, distractor, linked])), question, passages)
    assert without_hop[0][0].text == "Columbia University"  # one round: the reader's margin alone
