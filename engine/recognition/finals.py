"""A closed segment's final caption, made from its refine decode.

The refine decode reads the whole segment once more; what streaming showed for it (the hint)
bounds the decode's end (``anchor_to_hint``: a refine invents tails in trailing silence), and
is the final when the refine gave no words (or failed). The final goes to the sentence hold
(engine/recognition/sentence_hold.py), and its text to the recent finals the next decodes
hear (engine/recognition/recent_finals.py). engine/recognition/recognizer.py closes the
segments and waits for their refines.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from engine.audio import AudioBuffer, Samples
from engine.events import Caption, Word
from engine.recognition.config import RecognizerConfig
from engine.recognition.decoding import Refined
from engine.recognition.policy import anchor_to_hint, join_words
from engine.recognition.recent_finals import RecentFinals
from engine.recognition.segment import Closing, Segment
from engine.recognition.sentence_hold import HeldFinal
from engine.recognition.vad import SpeechTimeline


class FinalCaptions:
    """Makes the final captions of one stream's closed segments."""

    def __init__(
        self,
        buffer: AudioBuffer,
        speech: SpeechTimeline,
        recent: RecentFinals,
        config: RecognizerConfig,
        next_segment: Callable[[], int],
    ) -> None:
        self._buffer = buffer
        self._speech = speech
        self._recent = recent
        self._config = config
        self._next_segment = next_segment
        self._final_audio: dict[int, Samples] = {}
        self.lateness = 0.0
        """Audio heard after the last final's cut by the time the final was made."""

    def closing(self, seg: Segment, cut: float, hint: list[Word]) -> Closing:
        """The open segment ``seg`` cut at ``cut``, with ``hint``, what streaming showed for
        it; its refine is still to start."""
        return Closing(seg, cut, hint, self.room_after(seg, hint, cut))

    def room_after(self, seg: Segment, hint: list[Word], cut: float) -> list[int]:
        """How many words may have been spoken after each hint word, up to the end of the
        segment's speech: the last draft can predate the end of the segment by a step, and
        may have garbled a phrase into fewer words. Allows a brisk 3.5 words a second."""
        span = self._speech.speech_span(seg.start)
        if span is None:
            return [1] * len(hint)
        end = min(cut, span[1])
        return [1 + math.ceil(max(0.0, end - word.end) * 3.5) for word in hint]

    def take_audio(self, segment: int) -> Samples | None:
        """The audio of a segment just finalised (kept only with ``keep_final_audio``);
        each is handed out once."""
        return self._final_audio.pop(segment, None)

    def make(self, closing: Closing, refined: Refined | None) -> HeldFinal | None:
        """The final caption of a closed segment, from its refine (None: it had none, or it
        failed); None when the segment showed nothing."""
        seg, cut, hint = closing.segment, closing.cut, closing.hint
        self.lateness = self._buffer.end - cut
        words = hint
        if refined is not None:
            decoded = anchor_to_hint(refined.words, hint, closing.room)
            if decoded or not hint:
                words = decoded
        text = join_words(words)  # shaped as a continuation, or not, when it goes out
        final: HeldFinal | None = None
        if text or seg.drafted:
            start = hint[0].start if hint else seg.start
            caption = Caption(
                segment=seg.numbered(self._next_segment),
                lang=self._config.language,
                source=True,
                state="final",
                text=text,
                start=max(seg.start, min(start, cut)),
                end=max(cut, seg.start),
                stable=len(text),
            )
            speech_end = self._speech.speech_end_before(seg.start, cut)
            final = HeldFinal(caption, cut, cut - (speech_end or cut))
            if self._config.keep_final_audio:
                self._final_audio[seg.id] = self._buffer.slice(seg.start, cut).copy()
        self._recent.add(seg.start, text)
        return final
