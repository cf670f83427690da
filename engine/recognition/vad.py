"""Streaming voice activity detection (Silero VAD v6 by default: models/silero.py).

The model scores 512-sample windows (32 ms at 16 kHz), each seen with the 64 samples before
it, and carries a recurrent state between calls; :class:`StreamingVad` keeps that state so a
stream can be scored chunk by chunk. Calls are cheap (well under 1 ms a window) but still
run in the worker thread of the ASR step, never on the event loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.audio import SAMPLE_RATE, Samples

WINDOW = 512
CONTEXT = 64
WINDOW_SECONDS = WINDOW / SAMPLE_RATE


class VadModel(Protocol):
    """A voice activity model: speech probabilities of whole windows, carrying a recurrent
    state. Stateless itself, so every stream can share one instance; blocking (run it in
    the ASR pool). The Silero adapter is :class:`models.silero.SileroModel`."""

    def run(
        self, windows: np.ndarray, h: np.ndarray, c: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Probabilities (one per row of ``windows``: ``CONTEXT + WINDOW`` samples) and the
        new state ``(h, c)``."""
        ...


class StreamingVad:
    """Speech probabilities for consecutive 32 ms windows of one stream."""

    def __init__(self, model: VadModel) -> None:
        self._model = model
        self._h = np.zeros((1, 1, 128), dtype=np.float32)
        self._c = np.zeros((1, 1, 128), dtype=np.float32)
        self._context: Samples = np.zeros(CONTEXT, dtype=np.float32)
        self._pending: Samples = np.zeros(0, dtype=np.float32)
        self.windows_seen = 0

    def process(self, samples: Samples) -> np.ndarray:
        """Score every whole window now available; returns one probability per window."""
        data = np.concatenate([self._pending, samples])
        count = len(data) // WINDOW
        self._pending = data[count * WINDOW :]
        if count == 0:
            return np.zeros(0, dtype=np.float32)
        body = data[: count * WINDOW].reshape(count, WINDOW)
        contexts = np.empty((count, CONTEXT), dtype=np.float32)
        contexts[0] = self._context
        if count > 1:
            contexts[1:] = body[:-1, -CONTEXT:]
        self._context = body[-1, -CONTEXT:].copy()
        windows = np.concatenate([contexts, body], axis=1)
        probs, self._h, self._c = self._model.run(windows, self._h, self._c)
        self.windows_seen += count
        return probs


def _windows(seconds: float) -> float:
    """How many whole windows it takes to cover ``seconds`` (a float: inf stays inf)."""
    return float(np.ceil(seconds / WINDOW_SECONDS - 1e-9))


@dataclass(frozen=True, slots=True)
class NextSpeech:
    """What the VAD had heard after a final when it was published: the speaker's next
    segment begins at ``start`` (``heard``: its speech came), or, if only silence came so
    far, not before ``start`` (a lead-in before speech not heard yet). The translation
    stage decides from it at once whether the speaker went on or paused long
    (engine/translation/sentences.py)."""

    start: float
    heard: bool


class SpeechTimeline:
    """Which 32 ms windows of a stream held speech, addressed by absolute time.

    Pure bookkeeping over the VAD's output, so a step that covers several pauses (a slow
    machine takes large steps) can close one segment per pause, in order.
    """

    def __init__(self, origin: float, threshold: float = 0.5, hold: float = 0.0) -> None:
        """A window is speech if it scores ``threshold`` or more, or, once speech has begun,
        ``threshold - hold`` or more (Silero's own rule keeps speech going down to 0.15
        below its threshold); 0 holds nothing."""
        self.origin = origin
        self.threshold = threshold
        self.hold = hold
        self._probs = np.zeros(0, dtype=np.float32)
        self._flags = np.zeros(0, dtype=bool)
        self._in_speech = False
        self._first = 0  # absolute window index of _flags[0]
        self._trimmed_speech_end = -math.inf  # end of the last speech window trimmed away

    @property
    def end(self) -> float:
        return self._time(self._first + len(self._probs))

    def _time(self, index: int) -> float:
        return self.origin + index * WINDOW_SECONDS

    def _index(self, time: float) -> int:
        return int(np.ceil((time - self.origin) / WINDOW_SECONDS - 1e-9))

    def extend(self, probs: np.ndarray) -> None:
        probs = probs.astype(np.float32)
        begins = probs >= self.threshold
        holds = probs >= self.threshold - self.hold
        flags = np.empty(len(probs), dtype=bool)
        for i in range(len(probs)):
            self._in_speech = bool(begins[i] or (self._in_speech and holds[i]))
            flags[i] = self._in_speech
        self._probs = np.concatenate([self._probs, probs])
        self._flags = np.concatenate([self._flags, flags])

    def _span(self, start: float) -> tuple[int, np.ndarray]:
        lo = max(self._index(start), self._first)
        return lo, self._flags[lo - self._first :]

    def speech_span(self, start: float) -> tuple[float, float] | None:
        """Start of the first and end of the last speech window at or after ``start``."""
        lo, flags = self._span(start)
        hits = np.flatnonzero(flags)
        if hits.size == 0:
            return None
        return self._time(lo + int(hits[0])), self._time(lo + int(hits[-1]) + 1)

    def speech_end_before(self, start: float, end: float) -> float | None:
        """End of the last speech window that starts at or after ``start`` and ends by
        ``end``; None if there is none."""
        lo, flags = self._span(start)
        hi = max(0, min(len(flags), self._index(end) - lo))
        hits = np.flatnonzero(flags[:hi])
        if hits.size == 0:
            return None
        return self._time(lo + int(hits[-1]) + 1)

    def silence_after(self, time: float) -> float:
        """Seconds from ``time`` to the next speech window (or to the end of what was scored,
        if none came yet)."""
        lo, flags = self._span(time)
        hits = np.flatnonzero(flags)
        until = self._time(lo + int(hits[0])) if hits.size else self.end
        return max(0.0, until - time)

    def next_speech(self, time: float, lead_in: float) -> NextSpeech:
        """Where a segment after ``time`` begins (``lead_in`` before its speech, never before
        ``time``), or, while only silence followed ``time``, the earliest it can begin.
        Speech after ``time`` that was already trimmed away began at ``time`` as far as
        this can tell (the speaker went on)."""
        if self._trimmed_speech_end > time:
            return NextSpeech(time, heard=True)
        silence = self.silence_after(time)
        return NextSpeech(max(time, time + silence - lead_in), time + silence < self.end)

    def first_pause(
        self,
        start: float,
        min_silence: float,
        *,
        min_speech: float = 0.0,
        long_silence: float = float("inf"),
    ) -> float | None:
        """End of the speech before the first pause of at least ``min_silence`` seconds
        that follows speech at or after ``start``; None if there is no such pause yet.

        With ``min_speech``, a pause that follows less speech than that (from the first
        speech window at or after ``start``) counts only if it lasts ``long_silence``."""
        lo, flags = self._span(start)
        hits = np.flatnonzero(flags)
        if hits.size == 0:
            return None
        need = max(1.0, _windows(min_silence))
        need_long = _windows(long_silence)  # inf: no pause is long enough
        # Gaps between consecutive speech windows, and the open gap after the last one.
        gaps = np.diff(np.append(hits, len(flags))) - 1
        spoken = (hits + 1 - hits[0]) * WINDOW_SECONDS
        closing = (gaps >= need) & ((spoken >= min_speech - 1e-9) | (gaps >= need_long))
        long_gaps = np.flatnonzero(closing)
        if long_gaps.size == 0:
            return None
        return self._time(lo + int(hits[long_gaps[0]]) + 1)

    def quietest(self, start: float, end: float) -> float:
        """The boundary after the least speech-like window in ``[start, end)``: where to
        cut a segment that no pause has closed."""
        lo = max(self._index(start), self._first)
        hi = max(lo + 1, min(self._index(end), self._first + len(self._probs)))
        window = self._probs[lo - self._first : hi - self._first]
        if window.size == 0:
            return end
        return self._time(lo + int(np.argmin(window)) + 1)

    def trim_before(self, time: float) -> None:
        drop = min(len(self._probs), max(0, self._index(time) - 1 - self._first))
        if drop:
            hits = np.flatnonzero(self._flags[:drop])
            if hits.size:
                self._trimmed_speech_end = self._time(self._first + int(hits[-1]) + 1)
            self._probs = self._probs[drop:]
            self._flags = self._flags[drop:]
            self._first += drop
