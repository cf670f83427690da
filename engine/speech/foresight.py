"""Foresight (:class:`Foresight`): a sentence's lead synthesised ahead from its drafts.

An idle natural voice has nothing to do while the speaker is still in a sentence, and its
first piece is what the listener waits for once the final comes. So the translated drafts of a
sentence's first segment are cut into pieces as a final would be, and once a draft holds more
than its lead, that lead is synthesised ahead; the final's first piece takes the audio when it
reads the same (same words, same voice; made at normal speed, so a final already behind speaks
its lead so and the rest faster), and its first audio leaves at once. One such call a sentence
(each takes a little of the captions' cores: docs/metrics.md, "Natural voices / Foresight"),
only while nothing is queued; one that does not match is simply not used.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from engine.events import Caption
from engine.speech.backlog import SEGMENTS_REMEMBERED, Piece
from engine.speech.config import PaceConfig, SpeakerStats
from engine.speech.fallback import VoiceFallback
from engine.speech.pacing import Pace
from engine.speech.pieces import speech_pieces
from engine.speech.synthesis import Synthesis
from engine.speech.voice import Synthesizer

__all__ = ["Foreseen", "Foresight"]


@dataclass(frozen=True, slots=True)
class Foreseen:
    """A sentence's lead synthesised from a translated draft of ``segment`` before its final
    (module docstring), and the lead length its pieces were cut with."""

    segment: int
    text: str
    variant: int
    lead_chars: int
    voice: Synthesizer
    call: asyncio.Future[bytes | None]

    def serves(self, piece: Piece, voice: Synthesizer) -> bool:
        """Whether ``piece`` is this lead, in this voice (made at the normal speed: a
        final already behind speaks its lead so, and the rest faster)."""
        return (
            piece.segment,
            piece.text,
            piece.variant,
        ) == (self.segment, self.text, self.variant) and voice is self.voice


class Foresight:
    """The open sentences' drafts of one language, and the lead foreseen (module
    docstring)."""

    def __init__(
        self,
        config: PaceConfig,
        pace: Pace,
        fallback: VoiceFallback,
        synthesis: Synthesis,
        stats: SpeakerStats,
    ) -> None:
        self._config = config
        self._pace = pace
        self._fallback = fallback
        self._synthesis = synthesis
        self._stats = stats
        self._drafted: dict[int, int] = {}
        """Segment -> variant of each segment with translated drafts and no final yet: a
        variant's lowest is the head of its open sentence."""
        self._foreseen: Foreseen | None = None

    def foresee(self, caption: Caption, variant: int, idle: bool) -> None:
        """A translated draft of a segment not yet spoken: synthesise its sentence's lead
        ahead if the natural voice is ``idle`` and the draft is its sentence's first segment
        with more than a lead of text (module docstring); never waits."""
        if not self._config.foresight or not caption.text.strip():
            return
        self._drafted.setdefault(caption.segment, variant)
        if len(self._drafted) > SEGMENTS_REMEMBERED:  # drafts whose final never came
            del self._drafted[min(self._drafted)]
        head = min(s for s, v in self._drafted.items() if v == variant)
        voices = self._fallback.voices
        known = self._foreseen
        if (
            head != caption.segment
            or voices is None
            or voices.loading is not None
            or not idle
            or self._fallback.finishing  # the pool still finishes a call nobody wants
            # one call at a time, and one a sentence: each costs the captions' cores a little
            or (known is not None and (known.segment == head or not known.call.done()))
        ):
            return
        lead_chars = self._pace.lead_chars(voices.voice)
        sentences = speech_pieces(caption.text, self._config.clause_chars, lead_chars)
        if not sentences or len(sentences[0]) < 2:
            return  # no lead cut off yet: its last words may still grow
        text = sentences[0][0]
        if self._fallback.falls_back(voices, text):
            return  # the final would be spoken by the fallback
        call = asyncio.ensure_future(self._synthesis.call(voices.voice, text, 1.0, variant))
        self._foreseen = Foreseen(caption.segment, text, variant, lead_chars, voices.voice, call)
        self._stats.foreseen += 1

    def final(self, caption: Caption, variant: int, lead_chars: int) -> int:
        """A final of ``variant``'s speaker: the segments it covers have no open drafts any
        more. The lead its pieces are cut with: its foreseen lead's, so that the lead can
        serve, else ``lead_chars``."""
        last = max(caption.covers)
        for segment in [s for s, v in self._drafted.items() if v == variant and s <= last]:
            del self._drafted[segment]
        foreseen = self._foreseen
        if foreseen is not None and foreseen.segment == caption.segment:
            return foreseen.lead_chars  # cut as the draft was, so that its lead can serve
        return lead_chars

    def serve(self, piece: Piece, voice: Synthesizer) -> asyncio.Future[bytes | None] | None:
        """The call that synthesised ``piece`` ahead, if the lead foreseen is ``piece`` in
        ``voice`` (None otherwise). The lead is used once: one that does not serve is
        dropped, and its call, if unfinished, given up on."""
        foreseen, self._foreseen = self._foreseen, None
        if foreseen is None:
            return None
        if foreseen.serves(piece, voice):
            self._stats.foreseen_spoken += 1
            return foreseen.call
        if not foreseen.call.done():
            self._fallback.abandon(foreseen.call)  # unused, still finishing in its pool
        return None

    def cancel(self) -> None:
        """Closing: the lead foreseen is not wanted (its pool still finishes the call)."""
        if self._foreseen is not None:
            self._foreseen.call.cancel()
