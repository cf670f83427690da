"""A live session: its record and state, its speakers, its stages, and their streams.

One pipeline per session however many listeners: the session recognises each speaker's audio
once and publishes each event once (engine/publisher.py). A session is built whole by
:class:`engine.factory.SessionFactory`; nothing is attached to it afterwards.

Speakers: the presenter is the first; a panel adds more, each with a token of their own and a
language. Each speaker has at most one live stream, and the session at most
``MAX_LIVE_SPEAKERS`` at once. In a panel every caption names its speaker.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from engine.audio import SAMPLE_RATE
from engine.delivery.hub import Hub
from engine.delivery.push import PushStatus, PushTarget, SessionPushes
from engine.delivery.push_formats import Service
from engine.events import (
    Caption,
    Event,
    Question,
    SessionState,
    Speaker,
    StateChange,
    language_counts,
)
from engine.publisher import Publisher
from engine.questions import AUDIENCE_ID, AUDIENCE_NAME, QuestionBox
from engine.recognition.asr import DecodeOptions, token_budget
from engine.recognition.language_id import DetectingRecognizer
from engine.recognition.policy import guard_repetitions, join_words
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.resources import Recognition
from engine.recognition.vad import StreamingVad
from engine.refusals import Refusal, Refused
from engine.revisions import Remake
from engine.speech.stage import SessionSpeaker
from engine.store.base import (
    PRESENTER_ID,
    SessionRecord,
    SessionStore,
    SpeakerRecord,
    hash_token,
    new_token,
    presenter_speaker,
)
from engine.stream import PresenterStream, StreamLimits
from engine.telemetry import Observer
from engine.terms import Term, glossary_with, recognition_hint
from engine.translation.sentences import ends_sentence
from engine.translation.stage import SessionTranslator
from engine.workers import WorkerPool

AUTO = "auto"
"""The presenter's ``language`` that asks for detection among the session's languages."""

ANNOUNCE_INTERVAL = 0.5
"""Seconds over which audience-size changes are folded into one state event."""

CONTEXT_CHARS = 800
"""Recent final text kept per speaker and spoken language as the next stream's prompt."""

MAX_LIVE_SPEAKERS = 4
"""Speakers of one session who may stream at the same time."""

MAX_SPEAKERS = 12
"""Speakers one session may have, the presenter included."""

MAX_NAME = 60

MAX_QUESTION_S = 30
"""The longest spoken question heard (seconds)."""


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
        self._next_segment = max((c.segment for c in finals), default=-1) + 1
        self.audio_time = max((c.end for c in finals), default=0.0)
        self.speakers: list[SpeakerRecord] = [presenter_speaker(record), *speakers]
        self.contexts: dict[tuple[str, str], str] = {}
        """Recent final text per speaker and spoken language: the next stream's prompt. Per
        language, because Whisper follows its prompt's language (an English prompt made a
        Spanish turn come out translated into English)."""
        for caption in finals:
            if caption.source:
                key = (caption.speaker.id if caption.speaker else PRESENTER_ID, caption.lang)
                text = f"{self.contexts.get(key, '')} {caption.text}".strip()
                self.contexts[key] = text[-CONTEXT_CHARS:]
        self.streams: dict[str, PresenterStream] = {}
        """Each speaker's stream (the newest one, live or finished)."""
        self.questions = QuestionBox()
        self._glossary: dict[str, dict[str, str]] = {}
        self._terms: tuple[Term, ...] = tuple(terms)
        self._announcer: asyncio.Task[None] | None = None
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
    def panel(self) -> bool:
        """Whether the session has more than one speaker (its captions name them)."""
        return len(self.speakers) > 1

    def speaker_with_token(self, token: str) -> SpeakerRecord | None:
        """The speaker whose token this is (constant-time comparisons), or None."""
        found = None
        for speaker in self.speakers:
            if hmac.compare_digest(hash_token(token), speaker.token_hash):
                found = speaker
        return found

    def label(self, speaker_id: str) -> Speaker | None:
        """What a caption of this speaker names, in a panel; None otherwise."""
        if not self.panel:
            return None
        record = next((s for s in self.speakers if s.id == speaker_id), None)
        return None if record is None else Speaker(record.id, record.name)

    async def add_speaker(self, name: str, language: str) -> tuple[SpeakerRecord, str]:
        """A new speaker of the panel and their token (the only time it is seen)."""
        if len(self.speakers) >= MAX_SPEAKERS:
            raise Refused(Refusal.AT_CAPACITY, f"a session has at most {MAX_SPEAKERS} speakers")
        token = new_token()
        speaker = SpeakerRecord(
            id=secrets.token_hex(4),
            name=name.strip()[:MAX_NAME] or f"Speaker {len(self.speakers) + 1}",
            language=language,
            token_hash=hash_token(token),
            position=len(self.speakers),
        )
        await self._ports.store_pool.run(self._ports.store.add_speaker, self.code, speaker)
        self.speakers.append(speaker)
        return speaker, token

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
            stream.recognizer.set_terms(recognition_hint(self._terms))

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

    async def ask(self, asker: str, lang: str, text: str) -> Question:
        """Hold a question from the floor for the moderator, translated into the session's
        language (engine/questions.py); raises :class:`Refused`."""
        if lang not in self.offered:
            raise Refused(Refusal.UNKNOWN_LANGUAGE, f"ask in one of {', '.join(self.offered)}")
        translator = self.translators.get(lang)
        source = self.record.source_language
        translation = ""
        if lang != source and translator is not None and text.strip():
            translation = await translator.translate_text(source, text)
        question = self.questions.ask(asker, lang, text, translation)
        await self.publish(question)
        return question

    async def hear(self, lang: str, samples: np.ndarray) -> str:
        """What a spoken question says (16 kHz mono float32, at most ``MAX_QUESTION_S``)."""
        if len(samples) > MAX_QUESTION_S * SAMPLE_RATE:
            raise Refused(Refusal.MESSAGE_TOO_BIG, f"a question lasts at most {MAX_QUESTION_S} s")
        recognition = self._ports.recognition
        transcriber = recognition.transcriber_for(lang)
        if transcriber is None:
            raise Refused(Refusal.NO_MODEL, f"no recognition model for {lang!r}")
        options = DecodeOptions(
            language=lang,
            beam_size=5,
            word_timestamps=False,
            full_window=True,
            max_new_tokens=token_budget(len(samples) / SAMPLE_RATE),
        )
        decoded = await recognition.pool.run(transcriber.transcribe, samples, options)
        return join_words(guard_repetitions(decoded.words, ended=decoded.ended))

    async def decide(self, question_id: str, accept: bool) -> Question:
        """The moderator's decision; an accepted question is said, as "Audience", to
        everyone in every language."""
        question = self.questions.decide(question_id, "accepted" if accept else "rejected")
        await self.publish(question)
        if accept:
            text = question.text if ends_sentence(question.text) else f"{question.text}?"
            caption = Caption(
                segment=self.next_segment(),
                lang=question.lang,
                source=True,
                state="final",
                text=text,
                start=self.audio_time,
                end=self.audio_time,
                stable=len(text),
                speaker=Speaker(AUDIENCE_ID, AUDIENCE_NAME),
            )
            said = await self.publish(caption)
            translator = self.translators.get(question.lang)
            if translator is not None and isinstance(said, Caption):
                await translator.on_source(said, whole=True)
        return question

    def open_stream(
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
        Raises :class:`Refused` when the session cannot take the stream now."""
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
        recognizer: StreamingRecognizer | DetectingRecognizer
        if language == AUTO:
            recognizer = self._detecting_recognizer(speaker.id, fast_finals)
        else:
            recognizer = self._recognizer(speaker.id, language, self.audio_time, fast_finals)
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
            label=functools.partial(self.label, speaker.id),
            speaker_id=speaker.id,
        )
        self.streams[speaker.id] = stream
        return stream

    def _recognizer(
        self, speaker_id: str, language: str, start_time: float, fast_finals: bool = False
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
            context=self.contexts.get((speaker_id, language), ""),
            terms=recognition_hint(self._terms),
            run_first=recognition.pool.run_first,
            crowded=recognition.pool.crowded,
        )

    def _detecting_recognizer(
        self, speaker_id: str, fast_finals: bool = False
    ) -> DetectingRecognizer:
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
            return await pool.run_first(vad.process, audio)

        make: Callable[[str, float], StreamingRecognizer] = lambda language, start: (  # noqa: E731
            self._recognizer(speaker_id, language, start, fast_finals)
        )
        return DetectingRecognizer(candidates, identify, make, score, start_time=self.audio_time)

    def _stream_closed(self, stream: PresenterStream) -> None:
        self.audio_time = max(self.audio_time, stream.recognizer.received_until)
        language = stream.recognizer.language
        if language is not None:
            self.contexts[(stream.speaker_id, language)] = stream.recognizer.context
