"""Where a stream's open segment begins and ends, read from the VAD's speech timeline.

A segment begins ``lead_in_s`` before its speech, and is cut at a pause (silence of
``min_silence_s`` after speech, or ``short_pause_s`` once it is long or holds a committed
sentence end; only a ``long_pause_s`` one after under ``min_close_speech_s`` of speech), or
at its quietest moment when it grows past ``max_segment_s``: the segmenting rules of
engine/recognition/recognizer.py, each measured where engine/recognition/config.py says.
"""

from __future__ import annotations

from engine.recognition.config import RecognizerConfig
from engine.recognition.segment import Segment
from engine.recognition.vad import SpeechTimeline


class SegmentBounds:
    """Where a segment begins and where it is cut, by its speech and its length."""

    def __init__(self, speech: SpeechTimeline, config: RecognizerConfig) -> None:
        self._speech = speech
        self._config = config

    def pause_needed(self, seg: Segment, now: float) -> float:
        """How long a pause closes the open segment ``seg``: short once it is long, or once
        it holds a committed sentence end."""
        config = self._config
        length = now - seg.start
        committed_sentence = seg.agreement.last_sentence_end(seg.start) > 0
        if length >= config.long_segment_s or (
            committed_sentence and length >= config.sentence_min_s
        ):
            return config.short_pause_s
        return config.min_silence_s

    def cut_delay(self, seg: Segment, now: float) -> float:
        """How far after the speech's end a pause cuts the open segment ``seg``."""
        return min(0.25, self.pause_needed(seg, now) / 2)

    def find_cut(self, seg: Segment, now: float) -> float | None:
        """Where the open segment ``seg`` ends, if it has ended: at the first pause long
        enough for its length and content, or at its quietest moment once it is far too long.

        Cuts follow the VAD, never word timestamps: Whisper's word times drift by up to a
        second near the end of a window, and a cut inside a word loses it from both sides.
        """
        config = self._config
        speech_end = self._speech.first_pause(
            seg.start,
            self.pause_needed(seg, now),
            min_speech=config.min_close_speech_s,
            long_silence=config.long_pause_s,
        )
        if speech_end is not None:
            return min(now, speech_end + self.cut_delay(seg, now))
        if now - seg.start >= config.max_segment_s:
            return self._speech.quietest(seg.start + config.max_segment_s * 2 / 3, now)
        return None

    def skip_silence(self, seg: Segment) -> None:
        """Begin the open segment ``seg`` ``lead_in_s`` before its speech, if that speech is
        already heard and the segment has not been drafted. A step that comes late (a refine
        held the stream) finds the speech after a pause already begun, where a timely step
        would have dropped the silence before it: either way a segment begins a lead-in
        before its speech, so where it begins tells how long the speaker paused (the
        translation stage reads it so: engine/translation/sentences.py)."""
        if seg.drafted:
            return
        span = self._speech.speech_span(seg.start)
        if span is not None:
            seg.start = max(seg.start, span[0] - self._config.lead_in_s)
