"""Where a session's speech goes on from: segment numbers, audio time and speakers' context.

Every stream of a session numbers its segments in one sequence and times them on one clock:
a stream opened after another goes on from the audio time the last one reached. Each
speaker's recent final text, per spoken language, is the prompt of their next stream. A
session loaded back from the store goes on from its finals.
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
        self._next_segment = max((c.segment for c in finals), default=-1) + 1
        self.audio_time = max((c.end for c in finals), default=0.0)
        """How far into the session's audio its streams have reached (seconds)."""
        self._contexts: dict[tuple[str, str], str] = {}
        """Recent final text per speaker and spoken language: the next stream's prompt. Per
        language, because Whisper follows its prompt's language (an English prompt made a
        Spanish turn come out translated into English)."""
        for caption in finals:
            if caption.source:
                key = (caption.speaker.id if caption.speaker else PRESENTER_ID, caption.lang)
                text = f"{self._contexts.get(key, '')} {caption.text}".strip()
                self._contexts[key] = text[-CONTEXT_CHARS:]

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
