"""A live session: its record and state, its stages, and the presenter's stream.

One pipeline per session however many listeners: the session recognises the presenter's
audio once and publishes each event once (engine/publisher.py). A session is built whole by
:class:`engine.factory.SessionFactory`; nothing is attached to it afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from engine.delivery.hub import Hub
from engine.delivery.push import PushStatus, PushTarget, SessionPushes
from engine.delivery.push_formats import Service
from engine.events import Caption, Event, SessionState, StateChange, language_counts
from engine.publisher import Publisher
from engine.recognition.language_id import DetectingRecognizer
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.resources import Recognition
from engine.recognition.vad import StreamingVad
from engine.refusals import Refusal, Refused
from engine.speech.speaker import SessionSpeaker
from engine.store.base import SessionRecord, SessionStore
from engine.stream import PresenterStream, StreamLimits
from engine.telemetry import Observer
from engine.translation.stage import SessionTranslator
from engine.workers import WorkerPool

AUTO = "auto"
"""The presenter's ``language`` that asks for detection among the session's languages."""

ANNOUNCE_INTERVAL = 0.5
"""Seconds over which audience-size changes are folded into one state event."""

CONTEXT_CHARS = 800
"""Recent final text kept per spoken language as the next stream's prompt."""


@dataclass(frozen=True, slots=True)
class SessionPorts:
    """What every session of a process shares: where events go and what recognises."""

    store: SessionStore
    store_pool: WorkerPool
    hub: Hub
    recognition: Recognition
    observer: Observer


class Session:
    """One presenter's talk, followed by any number of listeners."""

    def __init__(
        self,
        record: SessionRecord,
        ports: SessionPorts,
        publisher: Publisher,
        *,
        translators: Mapping[str, SessionTranslator],
        speaker: SessionSpeaker | None,
        pushes: SessionPushes | None = None,
        finals: Sequence[Caption] = (),
    ) -> None:
        """``translators``: one per language a stream may be in (every offered language may
        be spoken: a traveller's conversation changes language each turn). ``speaker``: the
        speech stage, or None where this process speaks nothing. ``pushes``: where captions
        are pushed out (YouTube, Zoom), or None where this process pushes nothing.
        ``finals``: what the session said before (loaded from the store), to continue its
        numbering."""
        self.record = record
        self.state: SessionState = record.state
        self._ports = ports
        self._publisher = publisher
        self.translators: Mapping[str, SessionTranslator] = dict(translators)
        self.speaker = speaker
        self.pushes = pushes
        self._next_segment = max((c.segment for c in finals), default=-1) + 1
        self.audio_time = max((c.end for c in finals), default=0.0)
        self.contexts: dict[str, str] = {}
        """Recent final text per spoken language: the next stream's prompt. Per language,
        because Whisper follows its prompt's language (an English prompt made a Spanish
        turn come out translated into English)."""
        for caption in finals:
            if caption.source:
                text = f"{self.contexts.get(caption.lang, '')} {caption.text}".strip()
                self.contexts[caption.lang] = text[-CONTEXT_CHARS:]
        self.stream: PresenterStream | None = None
        self._glossary: dict[str, dict[str, str]] = {}
        self._announcer: asyncio.Task[None] | None = None

    @property
    def code(self) -> str:
        return self.record.code

    @property
    def offered(self) -> list[str]:
        """The session's languages: what it is spoken in first, then its targets."""
        return [self.record.source_language, *self.record.target_languages]

    @property
    def observer(self) -> Observer:
        return self._ports.observer

    @property
    def live(self) -> bool:
        """Whether a presenter stream is open (not yet finalised)."""
        return self.stream is not None and not self.stream.finished

    @property
    def glossary(self) -> Mapping[str, Mapping[str, str]]:
        """The presenter's terms per target language (kept in memory: lost on restart)."""
        return self._glossary

    def set_glossary(self, glossary: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the terms; every translation from now on applies them."""
        self._glossary = {lang: dict(terms) for lang, terms in glossary.items()}
        for translator in self.translators.values():
            translator.set_glossary(self._glossary)

    def next_segment(self) -> int:
        segment = self._next_segment
        self._next_segment += 1
        return segment

    async def publish(self, event: Event, *, arrived: float | None = None) -> Event:
        """Publish one event of the session (engine/publisher.py)."""
        return await self._publisher.publish(event, arrived=arrived)

    async def set_state(self, state: SessionState) -> None:
        if state == self.state:
            return
        self.state = state
        await self._ports.store_pool.run(self._ports.store.set_state, self.code, state, time.time())
        await self.announce()

    def follow_state(self, state: SessionState) -> None:
        """Another process published a state change of this session: take it over."""
        self.state = state

    async def announce(self) -> None:
        """Publish the current state and audience size, and translate into exactly the
        languages someone reads now (call after joins, leaves and language switches)."""
        self._follow_audience()
        hub = self._ports.hub
        counts = language_counts(hub.listeners_by_language(self.code))
        await self.publish(StateChange(self.state, hub.listener_count(self.code), counts))

    def _follow_audience(self) -> None:
        """Translate into, and speak, exactly the languages the audience asks for now."""
        hub = self._ports.hub
        wanted = hub.wanted_languages(self.code)
        for translator in self.translators.values():
            translator.set_languages(wanted)
        if self.speaker is not None:
            self.speaker.set_languages(hub.wanted_speech(self.code))

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

    async def push_to(self, target: PushTarget) -> PushStatus:
        """Push this session's finals in ``target.lang`` to ``target`` from now on (its
        language is translated from now on too)."""
        if self.pushes is None:
            raise RuntimeError("this process pushes no captions")
        status = await self.pushes.set(target)
        self._follow_audience()
        return status

    async def stop_push(self, service: Service) -> bool:
        """Stop pushing to ``service``; whether it was pushing."""
        stopped = self.pushes is not None and await self.pushes.remove(service)
        self._follow_audience()
        return stopped

    async def drain_translation(self) -> None:
        """Wait until every final published so far has its translations published."""
        for translator in list(self.translators.values()):
            await translator.drain()

    async def close(self) -> None:
        """Stop the session's stages (shutdown, or the session leaves memory)."""
        if self._announcer is not None:
            self._announcer.cancel()
        if self.pushes is not None:
            await self.pushes.close()
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
        slightly less accurate (a conversation turn, where someone waits for each final).
        Raises :class:`Refused` when the session cannot take a stream now."""
        if self.state == "ended":
            raise Refused(Refusal.SESSION_ENDED, "session has ended")
        if self.live:
            raise Refused(
                Refusal.ALREADY_LIVE, "another stream is already presenting in this session"
            )
        recognizer: StreamingRecognizer | DetectingRecognizer
        if language == AUTO:
            recognizer = self._detecting_recognizer(fast_finals)
        else:
            recognizer = self._recognizer(language, self.audio_time, fast_finals)
        self.stream = PresenterStream(
            self.code,
            recognizer,
            sample_rate,
            limits,
            publish=self.publish,
            translators=self.translators,
            observer=self.observer,
            on_closed=self._stream_closed,
        )
        return self.stream

    def _recognizer(
        self, language: str, start_time: float, fast_finals: bool = False
    ) -> StreamingRecognizer:
        recognition = self._ports.recognition
        transcriber = recognition.transcriber_for(language)
        if transcriber is None:
            raise Refused(Refusal.NO_MODEL, f"no recognition model for language {language!r}")
        config = recognition.config(language)
        if self.translators:
            config = replace(config, keep_final_audio=True)
        if fast_finals:
            config = replace(config, refine_full_window=False)
        return StreamingRecognizer(
            transcriber,
            StreamingVad(recognition.vad),
            recognition.pool.run,
            self.next_segment,
            config,
            start_time=start_time,
            context=self.contexts.get(language, ""),
        )

    def _detecting_recognizer(self, fast_finals: bool = False) -> DetectingRecognizer:
        recognition = self._ports.recognition
        candidates = [c for c in self.offered if recognition.can_recognise(c)]
        identifier = recognition.identifier
        if len(candidates) < 2 or identifier is None:
            raise Refused(
                Refusal.NO_MODEL,
                "automatic language detection needs a session offering two or more "
                "languages and the multilingual recognition model",
            )
        vad = StreamingVad(recognition.vad)
        pool = recognition.pool

        async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
            return await pool.run(identifier.identify, audio, among)

        async def score(audio: np.ndarray) -> np.ndarray:
            return await pool.run(vad.process, audio)

        make: Callable[[str, float], StreamingRecognizer] = lambda language, start: (  # noqa: E731
            self._recognizer(language, start, fast_finals)
        )
        return DetectingRecognizer(candidates, identify, make, score, start_time=self.audio_time)

    def _stream_closed(self, stream: PresenterStream) -> None:
        self.audio_time = stream.recognizer.received_until
        language = stream.recognizer.language
        if language is not None:
            self.contexts[language] = stream.recognizer.context
