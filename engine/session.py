"""A live session: its record, its event log, and the presenter's audio stream.

One pipeline per session however many listeners: the session recognises the presenter's
audio once and publishes each event once to the hub. Finals are written to the store before
anyone is offered them, so a final a listener saw survives a crash of the process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from engine.audio import SAMPLE_RATE, AudioFormatError, StreamResampler, decode_pcm16
from engine.delivery.hub import Hub
from engine.events import Caption, ErrorEvent, Event, SessionState, StateChange
from engine.recognition.language_id import DetectingRecognizer
from engine.recognition.recognizer import RecognizerConfig, StreamingRecognizer
from engine.recognition.vad import SileroModel, StreamingVad
from engine.speech.speaker import SessionSpeaker
from engine.store.base import SessionRecord, SessionStore
from engine.telemetry import NullObserver, Observer
from engine.translation.stage import SessionTranslator
from engine.workers import Saturated, WorkerPool

log = logging.getLogger(__name__)


AUTO = "auto"
"""The presenter's ``language`` that asks for detection among the session's languages."""

ANNOUNCE_INTERVAL = 0.5
"""Seconds over which audience-size changes are folded into one state event."""


class StreamError(Exception):
    """A presenter stream cannot continue; ``code`` is the WebSocket close code to use."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


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


@dataclass(slots=True)
class Pipeline:
    """The shared, warmed models and pools every session uses (built by the app lifespan)."""

    transcribers: dict[str, object]
    vad_model: SileroModel
    asr_pool: WorkerPool
    store_pool: WorkerPool
    recognizer_config: Callable[[str], RecognizerConfig]
    observer: Observer = field(default_factory=NullObserver)

    def transcriber_for(self, language: str) -> object | None:
        return self.transcribers.get(language) or self.transcribers.get("*")


class Session:
    """One presenter's talk, followed by any number of listeners."""

    def __init__(
        self,
        record: SessionRecord,
        store: SessionStore,
        hub: Hub,
        pipeline: Pipeline,
        *,
        last_seq: int = 0,
        finals: list[Caption] | None = None,
    ) -> None:
        self.record = record
        self.state: SessionState = record.state
        self._store = store
        self._hub = hub
        self._pipeline = pipeline
        finals = finals or []
        self._next_segment = max((c.segment for c in finals), default=-1) + 1
        self.audio_time = max((c.end for c in finals), default=0.0)
        self.contexts: dict[str, str] = {}
        """Recent final text per spoken language: the next stream's prompt. Per language,
        because Whisper follows its prompt's language (an English prompt made a Spanish
        turn come out translated into English)."""
        for caption in finals:
            if caption.source:
                text = f"{self.contexts.get(caption.lang, '')} {caption.text}".strip()
                self.contexts[caption.lang] = text[-800:]
        self.stream: PresenterStream | None = None
        self._source_published: dict[tuple[int, str], float] = {}
        self._announcer: asyncio.Task[None] | None = None
        self.glossary: dict[str, dict[str, str]] = {}
        """The presenter's terms per target language (kept in memory: lost on restart)."""
        self.translators: dict[str, SessionTranslator] = {}
        """By source language: set by the registry when the session offers translations.
        Every offered language may be spoken (a traveller's conversation changes language
        each turn), so there is one translator per language a stream may be in."""
        self.speaker: SessionSpeaker | None = None
        """Set by the registry when this process can speak (speaks final translations in
        every language some listener hears with audio on)."""
        hub.open(record.code, last_seq, finals)

    @property
    def code(self) -> str:
        return self.record.code

    @property
    def translator(self) -> SessionTranslator | None:
        """The translator from the session's own source language."""
        return self.translators.get(self.record.source_language)

    def translator_for(self, language: str) -> SessionTranslator | None:
        return self.translators.get(language)

    @property
    def observer(self) -> Observer:
        return self._pipeline.observer

    def next_segment(self) -> int:
        segment = self._next_segment
        self._next_segment += 1
        return segment

    async def publish(self, event: Event) -> Event:
        # The hub numbers it, has a final stored (_store_final) and only then offers it.
        numbered = await self._hub.emit(self.code, event, self._store_final)
        if isinstance(numbered, Caption):
            self._observe(numbered)
            if numbered.is_final and not numbered.source and self.speaker is not None:
                self.speaker.on_final(numbered)  # spoken translation: translations only
        elif isinstance(numbered, ErrorEvent):
            self._pipeline.observer.error("session")
        return numbered

    async def _store_final(self, caption: Caption) -> None:
        await self._pipeline.store_pool.run(self._store.append_final, self.code, caption)

    def _observe(self, caption: Caption) -> None:
        """Caption latency as the server sees it: from the audio's arrival (source) or
        from the source caption's publication (translation)."""
        now = time.monotonic()
        latency: float | None = None
        if caption.source:
            self._source_published[(caption.segment, caption.state)] = now
            if self.stream is not None:
                latency = self.stream.latency_of(caption.end, now)
        else:
            published = self._source_published.get((caption.segment, caption.state))
            latency = None if published is None else now - published
        if len(self._source_published) > 256:
            for key in list(self._source_published)[:128]:
                del self._source_published[key]
        self._pipeline.observer.caption(caption, latency)

    async def set_state(self, state: SessionState) -> None:
        if state == self.state:
            return
        self.state = state
        await self._pipeline.store_pool.run(self._store.set_state, self.code, state, time.time())
        await self.announce()

    async def announce(self) -> None:
        """Publish the current state and audience size, and translate into exactly the
        languages someone reads now (call after joins, leaves and language switches)."""
        self._follow_audience()
        await self.publish(StateChange(self.state, self._hub.listener_count(self.code)))

    def _follow_audience(self) -> None:
        """Translate into, and speak, exactly the languages the audience asks for now."""
        wanted = self._hub.wanted_languages(self.code)
        for translator in self.translators.values():
            translator.set_languages(wanted)
        if self.speaker is not None:
            self.speaker.set_languages(self._hub.wanted_speech(self.code))

    def audience_changed(self) -> None:
        """Listeners joined, left or switched language: update translation languages now and
        announce the new audience size once per ``ANNOUNCE_INTERVAL`` (a thousand phones
        joining at once must not send everyone a thousand counts)."""
        self._follow_audience()
        if self._announcer is None or self._announcer.done():
            self._announcer = asyncio.create_task(self._announce_later())

    async def _announce_later(self) -> None:
        await asyncio.sleep(ANNOUNCE_INTERVAL)
        await self.announce()

    async def drain_translation(self) -> None:
        """Wait until every final published so far has its translations published."""
        for translator in list(self.translators.values()):
            await translator.drain()

    async def close(self) -> None:
        """Stop the session's stages (shutdown, or the session is forgotten)."""
        for translator in list(self.translators.values()):
            await translator.close()
        if self.speaker is not None:
            await self.speaker.close()

    def open_stream(
        self, sample_rate: int, language: str, limits: StreamLimits, *, fast_finals: bool = False
    ) -> PresenterStream:
        """A presenter stream in ``language``, or ``"auto"``: whichever of the session's
        offered languages is spoken, detected from the first speech. ``fast_finals``: finals
        decode in the short window, about half a second sooner with Whisper base and
        slightly less accurate (a conversation turn, where someone waits for each final)."""
        if self.state == "ended":
            raise StreamError(1008, "session has ended")
        if self.stream is not None and not self.stream.finished:
            raise StreamError(1013, "another stream is already presenting in this session")
        recognizer: StreamingRecognizer | DetectingRecognizer
        if language == AUTO:
            recognizer = self._detecting_recognizer(fast_finals)
        else:
            recognizer = self._recognizer(language, self.audio_time, fast_finals)
        self.stream = PresenterStream(self, recognizer, sample_rate, limits)
        return self.stream

    def _recognizer(
        self, language: str, start_time: float, fast_finals: bool = False
    ) -> StreamingRecognizer:
        transcriber = self._pipeline.transcriber_for(language)
        if transcriber is None:
            raise StreamError(1003, f"no recognition model for language {language!r}")
        config = self._pipeline.recognizer_config(language)
        if self.translators:
            config = replace(config, keep_final_audio=True)
        if fast_finals:
            config = replace(config, refine_full_window=False)
        return StreamingRecognizer(
            transcriber,  # type: ignore[arg-type]
            StreamingVad(self._pipeline.vad_model),
            self._pipeline.asr_pool.run,
            self.next_segment,
            config,
            start_time=start_time,
            context=self.contexts.get(language, ""),
        )

    def _detecting_recognizer(self, fast_finals: bool = False) -> DetectingRecognizer:
        offered = [self.record.source_language, *self.record.target_languages]
        candidates = [c for c in offered if self._pipeline.transcriber_for(c) is not None]
        identifier = self._pipeline.transcribers.get("*")
        if len(candidates) < 2 or not hasattr(identifier, "identify"):
            raise StreamError(
                1003,
                "automatic language detection needs a session offering two or more "
                "languages and the multilingual recognition model",
            )
        vad = StreamingVad(self._pipeline.vad_model)
        pool = self._pipeline.asr_pool

        async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
            return await pool.run(identifier.identify, audio, among)  # type: ignore[union-attr]

        async def score(audio: np.ndarray) -> np.ndarray:
            return await pool.run(vad.process, audio)

        return DetectingRecognizer(
            candidates,
            identify,
            lambda language, start: self._recognizer(language, start, fast_finals),
            score,
            start_time=self.audio_time,
        )

    def stream_closed(self, stream: PresenterStream) -> None:
        self.audio_time = stream.recognizer.received_until
        language = stream.recognizer.language
        if language is not None:
            self.contexts[language] = stream.recognizer.context


class PresenterStream:
    """Audio in, captions out, for one WebSocket (or WebRTC track) of the presenter."""

    def __init__(
        self,
        session: Session,
        recognizer: StreamingRecognizer | DetectingRecognizer,
        sample_rate: int,
        limits: StreamLimits,
    ) -> None:
        self.session = session
        self.recognizer = recognizer
        self.limits = limits
        self._resampler = StreamResampler(sample_rate, SAMPLE_RATE)
        self._wake = asyncio.Event()
        self._stopping = False
        self.finished = False
        self._started = time.monotonic()
        self._received_seconds = 0.0
        self._task: asyncio.Task[None] | None = None
        self._arrivals: deque[tuple[float, float]] = deque(maxlen=4096)
        """(session audio time at the end of a message, monotonic arrival time)."""
        self.errors = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"asr-{self.session.code}")

    def feed(self, data: bytes) -> None:
        """Take one binary message of PCM; raises :class:`StreamError` on bad input."""
        if len(data) > self.limits.max_message_bytes:
            raise StreamError(1009, f"audio message over {self.limits.max_message_bytes} bytes")
        try:
            samples = decode_pcm16(data)
        except AudioFormatError as exc:
            raise StreamError(1003, str(exc)) from exc
        self._received_seconds += len(samples) / self._resampler.source_rate
        elapsed = time.monotonic() - self._started
        if self._received_seconds > elapsed * self.limits.max_speed + self.limits.burst_seconds:
            raise StreamError(1008, "audio arrives faster than real time")
        if self._received_seconds > self.limits.max_stream_seconds:
            raise StreamError(1008, "stream is longer than the session limit")
        self.recognizer.push(self._resampler.process(samples))
        self._arrivals.append((self.recognizer.received_until, time.monotonic()))
        self._wake.set()

    def latency_of(self, audio_time: float, now: float) -> float | None:
        """Seconds since the audio up to ``audio_time`` arrived (None if not known)."""
        for end, arrived in self._arrivals:
            if end >= audio_time:
                return now - arrived
        return None

    async def finish(self) -> None:
        """Stop: finalise everything said, wait until its events are published."""
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    await self._publish(self.recognizer.finish)
                    return
                if self.recognizer.backlog > 0:
                    await self._publish(self.recognizer.step)
        finally:
            self.finished = True
            self.session.stream_closed(self)

    async def _publish(self, work: Callable[[], object]) -> None:
        try:
            events = await work()  # type: ignore[misc]
        except Saturated:
            return
        except Exception as exc:  # a model failure: tell the audience, keep the session
            self.errors += 1
            self.session.observer.error(type(exc).__name__)
            log.exception("recognition failed in session %s", self.session.code)
            await self.session.publish(ErrorEvent(f"recognition failed: {type(exc).__name__}"))
            return
        for event in events:
            numbered = await self.session.publish(event)
            if not isinstance(numbered, Caption):
                continue
            translator = self.session.translator_for(numbered.lang)
            if translator is not None:
                audio = self.recognizer.take_final_audio(numbered.segment)
                await translator.on_source(numbered, audio if numbered.is_final else None)
