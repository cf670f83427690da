"""One presenter stream: PCM in, captions published and handed to translation.

Compute-aware: the stream's task takes a recognition step whenever audio has arrived, and one
step takes all the audio that arrived since the last (engine/recognition/recognizer.py).
Beside each step and each wait for audio, it awaits the final of a closed segment whose
refine is still decoding, and publishes it the moment the decode is done.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from engine.audio import SAMPLE_RATE, AudioFormatError, Samples, StreamResampler, decode_pcm16
from engine.events import Caption, ErrorEvent, Event, Shedding, Speaker
from engine.recognition.shedding import Shed, shed_names
from engine.recognition.vad import NextSpeech
from engine.refusals import Refusal, Refused
from engine.telemetry import Observer
from engine.translation.stage import SessionTranslator
from engine.workers import Saturated

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """Bounds on one presenter stream (documented in docs/protocol.md)."""

    max_message_bytes: int = 64 * 1024
    burst_seconds: float = 10.0
    """Audio may run ahead of the wall clock by at most this much (a client's buffer
    flushing after a network hiccup); beyond it the sender is faster than real time."""
    max_speed: float = 1.0
    """Audio seconds per wall second a presenter may send (tests and replays raise it)."""
    max_stream_seconds: float = 4 * 3600.0
    idle_takeover_s: float = 5.0
    """A stream that has received no audio for this long gives way to a new stream of the
    same speaker: clients send audio all the time, silence included, so it is a connection
    that died without closing (a presenter's Wi-Fi dropped; the server would hear of it only
    at the next ping timeout, up to 40 s later, and refuse their reconnect until then)."""


class Recognizer(Protocol):
    """What a stream needs of its recogniser (a StreamingRecognizer, or a
    DetectingRecognizer until it knows the language)."""

    @property
    def received_until(self) -> float: ...

    @property
    def backlog(self) -> float: ...

    @property
    def language(self) -> str | None: ...

    @property
    def context(self) -> str: ...

    @property
    def skipped_drafts(self) -> int: ...

    @property
    def shed(self) -> Shed: ...

    def push(self, samples: Samples) -> None: ...

    async def step(self) -> list[Caption]: ...

    async def refined_finals(self) -> list[Caption]: ...

    async def finish(self) -> list[Caption]: ...

    def take_final_audio(self, segment: int) -> Samples | None: ...

    def draft_audio(self, segment: int) -> Samples | None: ...

    def next_speech(self, end: float) -> NextSpeech | None: ...

    def set_terms(self, hint: str) -> None: ...


Publish = Callable[..., Awaitable[Event]]
"""The session's publish (``publish(event, arrived=...)``, engine/publisher.py)."""


class PresenterStream:
    """Audio in, captions out, for one WebSocket (or WebRTC track) of the presenter."""

    def __init__(
        self,
        code: str,
        recognizer: Recognizer,
        sample_rate: int,
        limits: StreamLimits,
        *,
        publish: Publish,
        translators: Mapping[str, SessionTranslator],
        observer: Observer,
        on_closed: Callable[[PresenterStream], Awaitable[None]],
        tenancy: Callable[[], AbstractContextManager[object]],
        label: Callable[[], Speaker | None] = lambda: None,
        speaker_id: str = "presenter",
    ) -> None:
        """``label``: who the stream's captions name (asked at each caption: a speaker
        added to the session makes it a panel). ``tenancy``: held while the stream runs, so
        the recognition pool counts it (:meth:`engine.workers.WorkerPool.tenancy`)."""
        self.code = code
        self.speaker_id = speaker_id
        self._label = label
        self.recognizer = recognizer
        self.limits = limits
        self._publish_event = publish
        self._translators = translators
        self._observer = observer
        self._on_closed = on_closed
        self._tenancy = tenancy
        self._resampler = StreamResampler(sample_rate, SAMPLE_RATE)
        self._wake = asyncio.Event()
        self._stopping = False
        self.finished = False
        self._started = time.monotonic()
        self._last_audio = self._started
        self._received_seconds = 0.0
        self._task: asyncio.Task[None] | None = None
        self._arrivals: deque[tuple[float, float]] = deque(maxlen=4096)
        """(session audio time at the end of a message, monotonic arrival time)."""
        self.errors = 0
        self.shed = Shed.NONE
        """What the recogniser sheds now (published as a :class:`Shedding` on a change)."""
        self._pausing: dict[str, Caption] = {}
        """Source language -> the last final its translator took, while the pause after
        it is timed (:meth:`_tell_silence`)."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"asr-{self.code}")

    def feed(self, data: bytes) -> None:
        """Take one binary message of PCM; raises :class:`Refused` on bad input."""
        if len(data) > self.limits.max_message_bytes:
            raise Refused(
                Refusal.MESSAGE_TOO_BIG, f"audio message over {self.limits.max_message_bytes} bytes"
            )
        try:
            samples = decode_pcm16(data)
        except AudioFormatError as exc:
            raise Refused(Refusal.BAD_AUDIO, str(exc)) from exc
        self._received_seconds += len(samples) / self._resampler.source_rate
        elapsed = time.monotonic() - self._started
        if self._received_seconds > elapsed * self.limits.max_speed + self.limits.burst_seconds:
            raise Refused(Refusal.TOO_FAST, "audio arrives faster than real time")
        if self._received_seconds > self.limits.max_stream_seconds:
            raise Refused(Refusal.TOO_LONG, "stream is longer than the session limit")
        self.recognizer.push(self._resampler.process(samples))
        self._last_audio = time.monotonic()
        self._arrivals.append((self.recognizer.received_until, self._last_audio))
        self._wake.set()

    @property
    def abandoned(self) -> bool:
        """Whether the stream is open but has received no audio for ``idle_takeover_s``
        (:class:`StreamLimits`): a new stream of its speaker may take over."""
        idle = time.monotonic() - self._last_audio
        return not self.finished and idle >= self.limits.idle_takeover_s

    def arrival_of(self, audio_time: float) -> float | None:
        """When the audio up to ``audio_time`` arrived (``time.monotonic``; None if unknown)."""
        for end, arrived in self._arrivals:
            if end >= audio_time:
                return arrived
        return None

    async def finish(self) -> None:
        """Stop: finalise everything said, wait until its events are published."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        try:
            with self._tenancy():
                await self._steps()
        finally:
            self.finished = True
            await self._on_closed(self)

    async def _steps(self) -> None:
        """Step the recogniser as audio arrives; finish it once the stream stops."""
        while True:
            await self._beside_finals(self._wake.wait())
            self._wake.clear()
            if self._stopping:
                await self._publish(self.recognizer.finish())
                return
            if self.recognizer.backlog > 0:
                await self._publish(self._beside_finals(self.recognizer.step()))
                self._tell_silence()

    def _tell_silence(self) -> None:
        """Tell each translator timing the pause after a final what the VAD has heard since
        (:meth:`SessionTranslator.on_silence`): a long silence closes the sentence as soon as
        the VAD has heard it."""
        for lang, final in list(self._pausing.items()):
            translator = self._translators[lang]
            if not translator.on_silence(final, self.recognizer.next_speech(final.end)):
                del self._pausing[lang]

    async def _beside_finals(self, work: Awaitable[T]) -> T:
        """Await ``work``, publishing each final whose refine finishes meanwhile."""
        task = asyncio.ensure_future(work)
        try:
            while not task.done():
                ready = asyncio.ensure_future(self.recognizer.refined_finals())
                try:
                    await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not ready.done():
                        ready.cancel()
                if ready.done() and not ready.cancelled():
                    await self._publish(ready)
            return task.result()
        finally:
            task.cancel()

    async def _publish(self, work: Awaitable[list[Caption]]) -> None:
        try:
            events = await work
        except Saturated:
            return
        except Exception as exc:  # a model failure: tell the audience, keep the session
            self.errors += 1
            self._observer.error(type(exc).__name__)
            log.exception("recognition failed in session %s", self.code)
            await self._publish_event(ErrorEvent(f"recognition failed: {type(exc).__name__}"))
            return
        if self.recognizer.shed != self.shed:
            self.shed = self.recognizer.shed
            await self._publish_event(Shedding(int(self.shed), shed_names(self.shed)))
        for event in events:
            speaker = self._label()
            if speaker is not None:
                event = replace(event, speaker=speaker)
            numbered = await self._publish_event(event, arrived=self.arrival_of(event.end))
            if not isinstance(numbered, Caption):
                continue
            translator = self._translators.get(numbered.lang)
            if translator is not None:
                if numbered.is_final:
                    await translator.on_source(
                        numbered,
                        self.recognizer.take_final_audio(numbered.segment),
                        after=self.recognizer.next_speech(numbered.end),
                    )
                    self._pausing[numbered.lang] = numbered
                else:
                    audio = None
                    if translator.drafts_from_speech:
                        audio = self.recognizer.draft_audio(numbered.segment)
                    await translator.on_source(numbered, audio)
