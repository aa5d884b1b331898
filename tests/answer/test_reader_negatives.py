"""rag.training.reader_fit's third stage: the questions and passages it reads as "no answer" (real SQuAD, HotpotQA)."""

from __future__ import annotations

from rag.training.abstain_fit import questions as abstain_questions
from rag.training.reader_fit import HOTPOT_DISTRACTORS, NEGATIVE_QUESTIONS, hotpot_distractors, negative_questions


def test_the_negative_questions_are_training_questions_the_abstention_fit_never_sees():
    items = negative_questions(0)
    assert len(items) == NEGATIVE_QUESTIONS
    fitted = {q for corpus, q, _ in abstain_questions(0) if corpus == "squad"}
    assert not fitted & {q for q, *_ in items}
    for _, answers, context, start in items:  # the answer label is where SQuAD puts it
        assert context[start : start + len(answers[0])] == answers[0]


def test_hotpotqa_distractors_read_alone_never_hold_the_answer():
    items = hotpot_distractors()
    assert len(items) > 50
    assert all(len(others) >= HOTPOT_DISTRACTORS and all(t.strip() for t in others) for _, others in items)
