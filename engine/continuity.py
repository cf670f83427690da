"""Where a session's speech goes on from: segment numbers, audio time and speakers' context.

Every stream of a session numbers its segments in one sequence and times them on one clock:
a stream opened after another goes on from the audio time the last one reached. Each
speaker's recent final text, per spoken language, is the prompt of their next stream. A
session loaded back from the store goes on from its finals, and so does one that follows
what other processes sharing the store said (:meth:`Continuity.follow`; the numbers
themselves are claimed through the store, engine/segment_claims.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import Caption
from engine.store.base import PRESENTER_ID
from engine.stream import Recognizer

CONTEXT_CHARS = 800
"""Recent final text kept per speaker and spoken language as the next stream's prompt."""


class Continuity:
    """One session's segment numbering, audio clock and per-speaker prompts (module
    docstring). Pure bookkeeping."""

    def __init__(self, finals: Sequence[Caption] = ()) -> None:
        """``finals``: what the session said before (loaded from the store)."""
        self._next_segment = 0
        self.audio_time = 0.0
        """How far into the session's audio its streams have reached (seconds)."""
        self._contexts: dict[tuple[str, str], str] = {}
        """Recent final text per speaker and spoken language: the next stream's prompt. Per
        language, because Whisper follows its prompt's language (an English prompt made a
        Spanish turn come out translated into English)."""
        self._context_until: dict[tuple[str, str], float] = {}
        """How far into the session's audio each prompt reaches (seconds)."""
        self.follow(finals)

    def follow(self, finals: Sequence[Caption]) -> None:
        """Go on after ``finals`` (the session's finals in ``seq`` order, as the store has
        them, other processes' included): after their last segment and audio time. A
        speaker's prompt is taken from them where they reach further into the audio than
        the prompt held here: a stream closed here keeps its recogniser's own text, which
        the decoder reads best (the shown text is shaped: docs/metrics.md, "Sentence
        breaks")."""
        if not finals:
            return
        self._next_segment = max(self._next_segment, max(c.segment for c in finals) + 1)
        self.audio_time = max(self.audio_time, max(c.end for c in finals))
        contexts: dict[tuple[str, str], tuple[str, float]] = {}
        for caption in finals:
            if caption.source:
                key = (caption.speaker.id if caption.speaker else PRESENTER_ID, caption.lang)
                text, until = contexts.get(key, ("", 0.0))
                text = f"{text} {caption.text}".strip()[-CONTEXT_CHARS:]
                contexts[key] = (text, max(until, caption.end))
        for key, (text, until) in contexts.items():
            if until > self._context_until.get(key, -1.0):
                self._contexts[key] = text
                self._context_until[key] = until

    @property
    def upcoming(self) -> int:
        """The number the next segment would take."""
        return self._next_segment

    def go_on_from(self, first: int) -> None:
        """Number the next segments from ``first`` on (numbers claimed for this process;
        never backwards)."""
        self._next_segment = max(self._next_segment, first)

    def next_segment(self) -> int:
        segment = self._next_segment
        self._next_segment += 1
        return segment

    def context(self, speaker_id: str, language: str) -> str:
        """The prompt of ``speaker_id``'s next stream in ``language`` ("" if none)."""
        return self._contexts.get((speaker_id, language), "")

    def stream_closed(self, speaker_id: str, recognizer: Recognizer) -> None:
        """A stream of ``speaker_id`` closed: go on from where its ``recognizer`` stopped."""
        self.audio_time = max(self.audio_time, recognizer.received_until)
        language = recognizer.language
        if language is not None:
            self._contexts[(speaker_id, language)] = recognizer.context
            self._context_until[(speaker_id, language)] = recognizer.received_until
