"""Questions from the floor: a listener asks, the moderator (the presenter) decides.

A question (typed, or spoken and recognised) is held, with its translation into the session's
language for the moderator, until the moderator accepts or rejects it. Held questions are
published as :class:`engine.events.Question` events, which reach the presenter's own views
only (engine/delivery/hub.py), never the audience. An accepted question becomes a source
final of the speaker "Audience", translated and spoken like any other line.

Bounds: each listener (by address) may ask ``per_listener`` questions per ``window_s``; at
most ``max_held`` wait at once (``Refused(AT_CAPACITY)`` past it); a question has at most
``max_chars`` characters.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace

from engine.events import Question, QuestionState
from engine.refusals import Refusal, Refused

AUDIENCE_ID = "audience"
AUDIENCE_NAME = "Audience"


@dataclass(frozen=True, slots=True)
class QuestionRules:
    per_listener: int = 3
    window_s: float = 300.0
    max_held: int = 50
    max_chars: int = 500


class QuestionBox:
    """The questions of one session (module docstring). Pure bookkeeping: the session
    publishes what it returns."""

    def __init__(
        self, rules: QuestionRules | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rules = rules or QuestionRules()
        self._clock = clock
        self._questions: OrderedDict[str, Question] = OrderedDict()
        self._asked: dict[str, list[float]] = {}

    def ask(self, asker: str, lang: str, text: str, translation: str) -> Question:
        """Hold a new question from ``asker`` (rate-limited); raises :class:`Refused`."""
        text = " ".join(text.split())
        if not text:
            raise Refused(Refusal.BAD_REQUEST, "a question needs some words")
        if len(text) > self.rules.max_chars:
            raise Refused(
                Refusal.BAD_REQUEST, f"a question has at most {self.rules.max_chars} characters"
            )
        now = self._clock()
        recent = [t for t in self._asked.get(asker, []) if now - t < self.rules.window_s]
        if len(recent) >= self.rules.per_listener:
            raise Refused(
                Refusal.TOO_FAST,
                f"at most {self.rules.per_listener} questions every "
                f"{self.rules.window_s / 60:.0f} minutes; the moderator has yours",
            )
        if sum(1 for q in self._questions.values() if q.state == "held") >= self.rules.max_held:
            raise Refused(Refusal.AT_CAPACITY, "the moderator has many questions waiting")
        self._asked[asker] = [*recent, now]
        question = Question(secrets.token_hex(4), lang, text, " ".join(translation.split()))
        self._keep(question)
        return question

    def follow(self, question: Question) -> None:
        """A question another process sharing the session held or decided (its event):
        kept here too, so the moderator may decide it through this process. A decision
        made here is never taken back by an older event."""
        known = self._questions.get(question.id)
        if known is not None and known.state != "held" and question.state == "held":
            return
        self._keep(replace(question, seq=0, ts=0.0))

    def _keep(self, question: Question) -> None:
        self._questions[question.id] = question
        while len(self._questions) > 4 * self.rules.max_held:  # forget decided ones first
            decided = (q for q in self._questions.values() if q.state != "held")
            oldest = next(decided, next(iter(self._questions.values())))
            del self._questions[oldest.id]

    def decide(self, question_id: str, state: QuestionState) -> Question:
        """Accept or reject a held question; raises :class:`Refused` for an unknown one or
        one already decided."""
        question = self._questions.get(question_id)
        if question is None:
            raise Refused(Refusal.NOT_FOUND, "no such question")
        if question.state != "held":
            raise Refused(Refusal.ALREADY_DECIDED, f"this question was already {question.state}")
        decided = replace(question, state=state)
        self._questions[question_id] = decided
        return decided

    def held(self) -> list[Question]:
        return [q for q in self._questions.values() if q.state == "held"]
