"""The pieces of a language's finals still to be spoken, in order (:class:`Backlog`).

A final is cut into pieces (engine/speech/pieces.py) and queued behind the finals before it;
each piece is taken in turn to be synthesised and spoken.

Overflow policy of the text queue: at most ``max_pieces`` pieces wait; beyond that the oldest
are dropped and counted as skipped. A voice too far behind skips to the newest final
(engine/speech/pacing.py): the older finals' pieces are dropped and counted the same way; the
next audio header says how many were skipped.

A corrected final (``rev`` > 0, a person's correction re-made into this language) replaces
the queued pieces of its segment when none of them has been spoken yet, so the line is
spoken corrected; once any piece of it was synthesised it is not spoken again.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from engine.events import Caption
from engine.speech.config import PaceConfig
from engine.speech.pieces import speech_pieces

__all__ = ["SEGMENTS_REMEMBERED", "Backlog", "Piece"]

SEGMENTS_REMEMBERED = 256
"""Spoken segments remembered, so that a late correction of one is not spoken again."""


@dataclass(frozen=True, slots=True)
class Piece:
    segment: int
    sentence: int
    """Running sentence number in this language (skipping keeps a whole sentence)."""
    text: str
    last: bool
    """The last piece of its caption."""
    queued: float
    variant: int = 0
    """Which of the voice's voices speaks it (one per speaker of a panel)."""


class Backlog:
    """The queued pieces of one language, oldest first (module docstring)."""

    def __init__(self, config: PaceConfig) -> None:
        self._config = config
        self._pieces: deque[Piece] = deque()
        self._sentences = 0
        self._dropped = 0
        self._started: deque[int] = deque(maxlen=SEGMENTS_REMEMBERED)
        """Segments of which a piece was taken to be spoken (newest last)."""

    def __len__(self) -> int:
        return len(self._pieces)

    @property
    def head(self) -> Piece:
        """The piece spoken next."""
        return self._pieces[0]

    def chars(self) -> int:
        """Characters of text queued."""
        return sum(len(p.text) for p in self._pieces)

    def add(self, caption: Caption, variant: int, lead_chars: int, now: float) -> None:
        """Queue ``caption`` cut into pieces, its first ``lead_chars`` long at most, in the
        voice's ``variant``; drop the oldest beyond ``max_pieces``."""
        sentences = speech_pieces(caption.text, self._config.clause_chars, lead_chars)
        for s_index, sentence in enumerate(sentences):
            self._sentences += 1
            for p_index, text in enumerate(sentence):
                last = s_index == len(sentences) - 1 and p_index == len(sentence) - 1
                self._pieces.append(
                    Piece(caption.segment, self._sentences, text, last, now, variant)
                )
        while len(self._pieces) > self._config.max_pieces:
            self._pieces.popleft()
            self._dropped += 1

    def replace(self, caption: Caption, lead_chars: int) -> bool:
        """A corrected final: its text replaces the queued pieces of its segment if none of
        them was spoken yet (True); otherwise nothing changes (False)."""
        segment = caption.segment
        if segment in self._started:
            return False
        places = [i for i, piece in enumerate(self._pieces) if piece.segment == segment]
        if not places:
            return False
        first = self._pieces[places[0]]
        kept = [piece for piece in self._pieces if piece.segment != segment]
        pieces = [
            Piece(segment, first.sentence, text, False, first.queued, first.variant)
            for sentence in speech_pieces(caption.text, self._config.clause_chars, lead_chars)
            for text in sentence
        ]
        if pieces:
            pieces[-1] = Piece(
                segment, first.sentence, pieces[-1].text, True, first.queued, first.variant
            )
        self._pieces = deque([*kept[: places[0]], *pieces, *kept[places[0] :]])
        return True

    def started(self, segment: int) -> bool:
        """Whether a piece of ``segment`` was taken to be spoken."""
        return segment in self._started

    def skip_to_newest(self) -> None:
        """Drop the queued pieces of every final before the newest: a final is never cut
        in the middle (one of a whole sentence can hold more speech than ``bound_s``)."""
        newest = self._pieces[-1].segment
        while self._pieces and self._pieces[0].segment != newest:
            self._pieces.popleft()
            self._dropped += 1

    def take(self) -> Piece:
        """The next piece, to be spoken now (its segment counts as started)."""
        piece = self._pieces.popleft()
        if not self._started or self._started[-1] != piece.segment:
            self._started.append(piece.segment)
        return piece

    def take_dropped(self) -> int:
        """Pieces dropped since this was last asked (the next audio header's ``skipped``)."""
        dropped, self._dropped = self._dropped, 0
        return dropped

    def clear(self) -> None:
        self._pieces.clear()
