"""A live session: its record and state, its speakers, its stages, and their streams.

One pipeline per session however many listeners: the session recognises each speaker's audio
once and publishes each event once (engine/publisher.py). A session is built whole by
:class:`engine.factory.SessionFactory`; nothing is attached to it afterwards.

Speakers (engine/panel.py): the presenter is the first; a panel adds more. Each speaker has
at most one live stream, and the session at most ``MAX_LIVE_SPEAKERS`` at once.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.audience import SessionAudience
from engine.continuity import Continuity
from engine.delivery.hub import Hub
from engine.delivery.push import PushStatus, PushTarget, SessionPushes
from engine.delivery.push_formats import Service
from engine.events import (
    Caption,
    Event,
    Question,
    SessionState,
)
from engine.panel import Speakers
from engine.publisher import Publisher
from engine.questions import QuestionBox
from engine.recognition.resources import Recognition
from engine.recognizers import StreamRecognizers
from engine.refusals import Refusal, Refused
from engine.revisions import Remake
from engine.segment_claims import SegmentClaims
from engine.session_questions import SessionQuestions
from engine.speech.stage import SessionSpeaker
from engine.store.base import SessionRecord, SessionStore, SpeakerRecord
from engine.stream import PresenterStream, StreamLimits
from engine.telemetry import Observer
from engine.terms import Term, glossary_with, recognition_hint
from engine.translation.stage import SessionTranslator
from engine.workers import WorkerPool

log = logging.getLogger(__name__)

MAX_LIVE_SPEAKERS = 4
"""Speakers of one session who may stream at the same time."""


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
        speakers: Sequence[SpeakerRecord] = (),
        terms: Sequence[Term] = (),
    ) -> None:
        """``translators``: one per language a stream may be in (every offered language may
        be spoken: a traveller's conversation changes language each turn). ``speaker``: the
        speech stage, or None where this process speaks nothing. ``pushes``: where captions
        are pushed out (YouTube, Zoom), or None where this process pushes nothing.
        ``finals``: what the session said before (loaded from the store), to continue its
        numbering. ``speakers``: the panel's stored speakers (the presenter comes first
        anyway). ``terms``: the session's term list (engine/terms.py)."""
        self.record = record
        self.state: SessionState = record.state
        self._ports = ports
        self._publisher = publisher
        self.translators: Mapping[str, SessionTranslator] = dict(translators)
        self.speaker = speaker
        self.pushes = pushes
        self._continuity = Continuity(finals)
        self._claims = SegmentClaims(record.code, self._continuity, ports.store, ports.store_pool)
        self.speakers = Speakers(record, speakers, ports.store, ports.store_pool)
        self.streams: dict[str, PresenterStream] = {}
        """Each speaker's stream (the newest one, live or finished)."""
        self._glossary: dict[str, dict[str, str]] = {}
        self._terms: tuple[Term, ...] = tuple(terms)
        self._recognizers = StreamRecognizers(
            ports.recognition,
            self._continuity,
            self.offered,
            keep_final_audio=bool(self.translators),
            hint=self._hint,
        )
        self._questions = SessionQuestions(
            record.source_language,
            self.offered,
            self.translators,
            ports.recognition,
            self._continuity,
            self._claims,
            self.publish,
        )
        self._audience = SessionAudience(
            record.code,
            ports.hub,
            self.translators,
            speaker,
            pushes,
            self.publish,
            lambda: self.state,
        )
        self._apply_glossary()

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
    def live_streams(self) -> list[PresenterStream]:
        """The streams open now (not yet finalised)."""
        return [stream for stream in self.streams.values() if not stream.finished]

    @property
    def live(self) -> bool:
        """Whether any speaker's stream is open."""
        return bool(self.live_streams)

    @property
    def glossary(self) -> Mapping[str, Mapping[str, str]]:
        """The presenter's glossary per target language (kept in memory: lost on restart);
        the term list's translations are applied on top of it."""
        return self._glossary

    def set_glossary(self, glossary: Mapping[str, Mapping[str, str]]) -> None:
        """Replace the glossary; every translation from now on applies it."""
        self._glossary = {lang: dict(terms) for lang, terms in glossary.items()}
        self._apply_glossary()

    @property
    def terms(self) -> tuple[Term, ...]:
        return self._terms

    def set_terms(self, terms: Sequence[Term]) -> None:
        """Replace the term list: the open stream's decodes from now on are biased towards
        it, and every translation from now on applies its fixed translations."""
        self._terms = tuple(terms)
        self._apply_glossary()
        for stream in self.live_streams:
            stream.recognizer.set_terms(self._hint())

    def _hint(self) -> str:
        """The term list as recognition hint text (engine/terms.py)."""
        return recognition_hint(self._terms)

    def _apply_glossary(self) -> None:
        merged = glossary_with(self._glossary, self._terms)
        for translator in self.translators.values():
            translator.set_glossary(merged)

    def corrected(self, caption: Caption, remakes: Sequence[Remake] = ()) -> None:
        """A person corrected the source final ``caption`` (published with its ``rev``):
        its translations are made again (engine/translation/stage.py). ``remakes``: the
        published translation finals that cover it; none where another process made them
        (this one only takes the correction into sentences not translated yet)."""
        translator = self.translators.get(caption.lang)
        if translator is not None:
            translator.correct(caption, remakes)

    def next_segment(self) -> int:
        return self._continuity.next_segment()

    @property
    def audio_time(self) -> float:
        """How far into the session's audio its streams have reached (seconds)."""
        return self._continuity.audio_time

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
        """Publish the current state and audience size (engine/audience.py)."""
        await self._audience.announce()

    def audience_changed(self) -> None:
        """Listeners joined, left or switched language (engine/audience.py)."""
        self._audience.changed()

    async def push_to(self, target: PushTarget) -> PushStatus:
        """Push this session's finals in ``target.lang`` to ``target`` (engine/audience.py)."""
        return await self._audience.push_to(target)

    async def stop_push(self, service: Service) -> bool:
        """Stop pushing to ``service``; whether it was pushing (engine/audience.py)."""
        return await self._audience.stop_push(service)

    async def finish_streams(self) -> None:
        """Finalise every stream open here and have every final translated: the session
        ends (through this process, or another that shares it), or the process stops."""
        for stream in self.live_streams:
            await stream.finish()
        await self.drain_translation()

    async def drain_translation(self) -> None:
        """Wait until every final published so far has its translations published."""
        for translator in list(self.translators.values()):
            await translator.drain()

    async def close(self) -> None:
        """Stop the session's stages (shutdown, or the session leaves memory)."""
        await self._audience.close()
        for translator in list(self.translators.values()):
            await translator.close()
        if self.speaker is not None:
            await self.speaker.close()

    @property
    def questions(self) -> QuestionBox:
        """The questions from the floor (engine/questions.py)."""
        return self._questions.box

    async def ask(self, asker: str, lang: str, text: str) -> Question:
        """Hold a question from the floor (engine/session_questions.py)."""
        return await self._questions.ask(asker, lang, text)

    async def hear(self, lang: str, samples: np.ndarray) -> str:
        """What a spoken question says (engine/session_questions.py)."""
        return await self._questions.hear(lang, samples)

    async def decide(self, question_id: str, accept: bool) -> Question:
        """The moderator's decision on a question (engine/session_questions.py)."""
        return await self._questions.decide(question_id, accept)

    async def open_stream(
        self,
        speaker: SpeakerRecord,
        sample_rate: int,
        language: str,
        limits: StreamLimits,
        *,
        fast_finals: bool = False,
    ) -> PresenterStream:
        """A stream of ``speaker`` in ``language``, or ``"auto"``: whichever of the session's
        offered languages is spoken, detected from the first speech. ``fast_finals``: finals
        decode in the short window, about half a second sooner with Whisper base and
        slightly less accurate (a conversation turn, where someone waits for each final).
        Raises :class:`Refused` when the session cannot take the stream now. The stream
        numbers its segments from the session's claim (engine/segment_claims.py), held
        until it closes. A stream of the same speaker that receives no audio any more
        (:attr:`PresenterStream.abandoned`: its connection died without closing) is
        finalised first, and the new one takes over."""
        await self._claims.hold()
        try:
            current = self.streams.get(speaker.id)
            if current is not None and current.abandoned:
                log.info("%s: %s's new stream takes over an abandoned one", self.code, speaker.id)
                await current.finish()
            return self._new_stream(speaker, sample_rate, language, limits, fast_finals)
        except BaseException:
            await self._claims.let_go()
            raise

    def _new_stream(
        self,
        speaker: SpeakerRecord,
        sample_rate: int,
        language: str,
        limits: StreamLimits,
        fast_finals: bool,
    ) -> PresenterStream:
        if self.state == "ended":
            raise Refused(Refusal.SESSION_ENDED, "session has ended")
        current = self.streams.get(speaker.id)
        if current is not None and not current.finished:
            raise Refused(Refusal.ALREADY_LIVE, "this session is already live on another device")
        if len(self.live_streams) >= MAX_LIVE_SPEAKERS:
            raise Refused(
                Refusal.AT_CAPACITY,
                f"at most {MAX_LIVE_SPEAKERS} speakers of a session may stream at once",
            )
        recognizer = self._recognizers.open(speaker.id, language, fast_finals)
        stream = PresenterStream(
            self.code,
            recognizer,
            sample_rate,
            limits,
            publish=self.publish,
            translators=self.translators,
            observer=self.observer,
            on_closed=self._stream_closed,
            tenancy=self._ports.recognition.pool.tenancy,
            label=functools.partial(self.speakers.label, speaker.id),
            speaker_id=speaker.id,
        )
        self.streams[speaker.id] = stream
        return stream

    async def _stream_closed(self, stream: PresenterStream) -> None:
        self._continuity.stream_closed(stream.speaker_id, stream.recognizer)
        await self._claims.let_go()
