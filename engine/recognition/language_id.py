"""A stream in whichever of a few languages is spoken (a traveller's conversation on one phone).

:class:`DetectingRecognizer` stands in for a
:class:`~engine.recognition.recognizer.StreamingRecognizer` whose language is not known yet:
it holds the stream's first audio until the voice activity detector (Silero, the same model
the recogniser uses) has heard ``min_speech_s`` of speech (or the stream stops, or
``max_wait_s`` of speech-bearing audio passed), asks Whisper's language identification which
of the ``candidates`` it is (restricted to them: the other languages Whisper knows are
ignored), then hands all the held audio to a recogniser in that language and delegates to it
from then on. Captions therefore start about ``min_speech_s`` later than on a stream whose
language was given; finals are unaffected.

An answer below ``confident`` is not taken: the detector holds on and asks again once
``retry_s`` more speech has been heard, until it is confident, ``max_wait_s`` has passed or
the stream stops (then the likeliest language is taken). On short speech Whisper's
identification leans to the wrong language now and then; a little more speech settles it
(docs/metrics.md, "Language detection").

While only silence has been heard, the held audio is cut to a short lead-in, so a speaker
who taps and waits neither has their language guessed from silence nor fills memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import numpy as np

from engine.audio import SAMPLE_RATE
from engine.events import Caption
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.shedding import Shed
from engine.recognition.vad import WINDOW, NextSpeech

log = logging.getLogger(__name__)

Samples = np.ndarray
LEAD_IN = SAMPLE_RATE // 2
"""Samples of silence kept before the first speech."""


class DetectingRecognizer:
    """Detect the language, then recognise in it (module docstring)."""

    def __init__(
        self,
        candidates: Sequence[str],
        identify: Callable[[Samples, Sequence[str]], Awaitable[dict[str, float]]],
        make: Callable[[str, float], StreamingRecognizer],
        score: Callable[[Samples], Awaitable[np.ndarray]],
        *,
        start_time: float = 0.0,
        min_speech_s: float = 1.5,
        max_wait_s: float = 6.0,
        threshold: float = 0.5,
        confident: float = 0.95,
        retry_s: float = 0.5,
    ) -> None:
        """``make(language, start_time)`` builds the recogniser; ``score`` gives the speech
        probability of each 512-sample window of the audio passed (a streaming VAD: each
        call continues the previous one)."""
        if len(candidates) < 2:
            raise ValueError("language detection needs at least two candidate languages")
        self.candidates = tuple(candidates)
        self._identify = identify
        self._make = make
        self._score = score
        self._start_time = start_time
        self.min_speech_s = min_speech_s
        self.max_wait_s = max_wait_s
        self.threshold = threshold
        self.confident = confident
        self.retry_s = retry_s
        self._asked_at = 0.0
        """Seconds of speech heard when the identifier was last asked (0: not yet)."""
        self._held: list[Samples] = []
        self._held_samples = 0
        self._unscored: list[Samples] = []
        self._probs: list[float] = []
        """One per scored window since the first held sample (dropped with the silence)."""
        self._inner: StreamingRecognizer | None = None
        self._detected = asyncio.Event()
        """Set once ``_inner`` exists."""
        self.language: str | None = None
        self.probabilities: dict[str, float] = {}

    # -- the StreamingRecognizer surface PresenterStream and Session use ------------------

    @property
    def received_until(self) -> float:
        if self._inner is not None:
            return self._inner.received_until
        return self._start_time + self._held_samples / SAMPLE_RATE

    @property
    def backlog(self) -> float:
        if self._inner is not None:
            return self._inner.backlog
        return self._held_samples / SAMPLE_RATE

    @property
    def context(self) -> str:
        return self._inner.context if self._inner is not None else ""

    @property
    def skipped_drafts(self) -> int:
        return self._inner.skipped_drafts if self._inner is not None else 0

    @property
    def shed(self) -> Shed:
        return self._inner.shed if self._inner is not None else Shed.NONE

    def take_final_audio(self, segment: int) -> Samples | None:
        return self._inner.take_final_audio(segment) if self._inner is not None else None

    def draft_audio(self, segment: int) -> Samples | None:
        return self._inner.draft_audio(segment) if self._inner is not None else None

    def next_speech(self, end: float) -> NextSpeech | None:
        return self._inner.next_speech(end) if self._inner is not None else None

    def set_terms(self, hint: str) -> None:
        """Pass new terms on; before detection ``make`` builds the recogniser with the
        session's terms of that moment."""
        if self._inner is not None:
            self._inner.set_terms(hint)

    def push(self, samples: Samples) -> None:
        if self._inner is not None:
            self._inner.push(samples)
        else:
            self._held.append(samples)
            self._unscored.append(samples)
            self._held_samples += len(samples)

    async def step(self, *, draft: bool = True) -> list[Caption]:
        if self._inner is None and not await self._try_detect(final=False):
            return []
        assert self._inner is not None
        return await self._inner.step(draft=draft)

    async def refined_finals(self) -> list[Caption]:
        await self._detected.wait()
        assert self._inner is not None
        return await self._inner.refined_finals()

    async def finish(self) -> list[Caption]:
        if self._inner is None and not await self._try_detect(final=True):
            return []
        assert self._inner is not None
        return await self._inner.finish()

    # -- detection ------------------------------------------------------------------------

    async def _try_detect(self, *, final: bool) -> bool:
        if not self._held:
            return False
        if self._unscored:
            fresh = np.concatenate(self._unscored)
            self._unscored.clear()
            self._probs.extend(float(p) for p in await self._score(fresh))
        audio = np.concatenate(self._held)
        voiced = [i for i, p in enumerate(self._probs) if p >= self.threshold]
        if not voiced:
            if not final:  # only silence yet: keep a short lead-in, not a growing buffer
                drop = max(0, (len(audio) - LEAD_IN) // WINDOW * WINDOW)
                drop = min(drop, len(self._probs) * WINDOW)
                self._start_time += drop / SAMPLE_RATE
                self._held, self._held_samples = [audio[drop:]], len(audio) - drop
                del self._probs[: drop // WINDOW]
            return False  # (at the end: nothing was said, nothing to recognise)
        speech = len(voiced) * WINDOW / SAMPLE_RATE
        waited = (len(audio) - voiced[0] * WINDOW) / SAMPLE_RATE
        must = final or waited >= self.max_wait_s
        if not must and (speech < self.min_speech_s or speech < self._asked_at + self.retry_s):
            return False
        first = max(0, voiced[0] * WINDOW - WINDOW)
        self._asked_at = speech
        self.probabilities = await self._identify(audio[first:], self.candidates)
        likeliest = max(self.candidates, key=lambda c: self.probabilities.get(c, 0.0))
        if not must and self.probabilities.get(likeliest, 0.0) < self.confident:
            log.info("not sure yet after %.1f s of speech (%s)", speech, self.probabilities)
            return False
        self.language = likeliest
        log.info("detected %s (%s)", self.language, self.probabilities)
        self._inner = self._make(self.language, self._start_time)
        # Everything held, including what arrived while the identifier and the VAD ran:
        # the recogniser must hear the turn whole.
        self._inner.hand_over(np.concatenate(self._held))
        self._detected.set()
        self._held.clear()
        self._unscored.clear()
        return True
