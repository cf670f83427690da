"""A stream's finals, held until their pause tells whether they end a sentence.

The rules are engine/recognition/punctuation.py's: a final keeps its trailing sentence mark
only if its words can end a sentence and the pause after it lasts ``sentence_pause_s``; the
speaker going on first says it did not end one. So a final whose mark may stay waits here
until the pause has lasted that long or speech resumes; one that cannot end a sentence goes
at once, without its mark; and the final after one that did not end a sentence continues it
(:meth:`SentenceHold.shaped`; a final is shaped as it goes out). The recogniser
(engine/recognition/recognizer.py) hands each final here as it makes it and gives out what
comes back, at every step too. docs/metrics.md, "Sentence breaks", measured the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.events import Caption
from engine.recognition.punctuation import (
    cannot_end_sentence,
    continuing,
    ends_sentence,
    running_on,
)
from engine.recognition.vad import SpeechTimeline


@dataclass(frozen=True, slots=True)
class HeldFinal:
    """A segment's final, held until its pause tells whether it ends a sentence."""

    caption: Caption
    cut: float
    silence_before_cut: float
    """The pause between its last speech and the cut."""


class SentenceHold:
    """Holds a stream's latest final while its pause is still too short to tell."""

    def __init__(
        self, speech: SpeechTimeline, language: str | None, sentence_pause_s: float
    ) -> None:
        self._speech = speech
        self._language = language
        self._pause_s = sentence_pause_s
        self._held: HeldFinal | None = None
        self._mid_sentence = False
        """The last final given out did not end a sentence: the next one continues it."""

    def shaped(self, text: str) -> str:
        """``text``, a decode of the open segment, as shown: a continuation of the last
        final's sentence where that did not end one. (A final is shaped when it is settled.)"""
        return continuing(text) if text and self._mid_sentence else text

    def hold(self, final: HeldFinal | None, *, ended: bool = False) -> list[Caption]:
        """A segment closed with ``final`` (None: it showed nothing): the final held before
        goes if its pause now tells, as it must once a later final exists (the speaker went
        on); ``final`` waits for its pause unless it can already be told, or the stream
        ``ended`` with it (a sentence end)."""
        released = self.release()
        if final is None:
            return released
        if self._held is not None:  # a later final: the speaker went on
            released.append(self._settle(self._held, sentence_end=False))
        self._held = None
        if ended:
            return [*released, self._settle(final, sentence_end=True)]
        self._held = final
        return [*released, *self.release()]

    def release(self) -> list[Caption]:
        """The held final, once its pause tells whether it ends a sentence: the pause has
        lasted ``sentence_pause_s`` (it does, if its words say so too) or the speaker went on
        (it does not). A final that cannot end a sentence goes at once."""
        held = self._held
        if held is None:
            return []
        paused = held.silence_before_cut + self._speech.silence_after(held.cut)
        resumed = self._speech.speech_span(held.cut) is not None
        text = held.caption.text
        could_end = ends_sentence(text) and not cannot_end_sentence(text, self._language)
        long_enough = paused >= self._pause_s
        if could_end and not resumed and not long_enough:
            return []  # wait: the next step tells
        self._held = None
        return [self._settle(held, sentence_end=could_end and long_enough)]

    def end(self) -> list[Caption]:
        """The stream ended in the held final's pause: it ends a sentence if it has a mark."""
        held, self._held = self._held, None
        if held is None:
            return []
        return [self._settle(held, sentence_end=ends_sentence(held.caption.text))]

    def _settle(self, final: HeldFinal, *, sentence_end: bool) -> Caption:
        """Publishable: a continuation of the last final's sentence where that did not end
        one (:meth:`shaped`, decided now, when every final before it is settled), and the
        trailing sentence mark kept only at a sentence end."""
        caption = final.caption
        text = self.shaped(caption.text)
        text = text if sentence_end else running_on(text)
        if text:
            self._mid_sentence = not sentence_end
        if text != caption.text:
            caption = replace(caption, text=text, stable=len(text))
        return caption
