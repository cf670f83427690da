"""Questions from the floor (engine/questions.py): pure bookkeeping, with a scripted clock."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.events import Question
from engine.questions import QuestionBox, QuestionRules
from engine.refusals import Refusal, Refused


def test_a_question_held_or_decided_elsewhere_is_followed_and_decided_once() -> None:
    box = QuestionBox()
    asked = Question("q1", "es", "¿Dónde está la salida?", "Where is the exit?", seq=7, ts=1.0)
    box.follow(asked)  # held on another process
    assert [q.id for q in box.held()] == ["q1"]
    assert box.held()[0].seq == 0  # its place in this process's stream is not the event's
    accepted = box.decide("q1", "accepted")
    assert accepted.state == "accepted" and box.held() == []
    box.follow(asked)  # an older event never takes the decision back
    assert box.held() == []
    with pytest.raises(Refused) as refused:
        box.decide("q1", "rejected")
    assert refused.value.reason is Refusal.ALREADY_DECIDED
    box.follow(replace(Question("q2", "en", "Why?"), state="rejected"))  # decided elsewhere
    with pytest.raises(Refused):
        box.decide("q2", "accepted")


def test_followed_questions_are_bounded_like_asked_ones() -> None:
    box = QuestionBox(QuestionRules(max_held=2))
    for n in range(20):
        box.follow(Question(f"q{n}", "en", f"Question {n}?"))
    held = box.held()
    assert len(held) == 8 and held[-1].id == "q19"  # at most four times max_held kept
