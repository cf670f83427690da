"""The presenter's lifecycle, the same for every transport.

Start presenting (credentials, language, sample rate, finals mode), feed audio, stop
(finalise everything said, have it translated and delivered, then report the end), end the
session, and count live streams. The WebSocket (app/present.py), WebRTC (app/webrtc.py),
``POST .../end`` (app/api.py) and shutdown (app/main.py) all call this API; none of them
repeats a step. A refusal is a :class:`engine.refusals.Refused` with a typed reason; each
transport maps reasons to its own codes in one table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Literal

from engine import languages
from engine.delivery.hub import Hub, Subscription
from engine.events import Event, PresenterEvent
from engine.lag import LagReports
from engine.recognition.resources import Recognition
from engine.recognizers import AUTO
from engine.refusals import Refusal, Refused
from engine.registry import SessionRegistry
from engine.session import Session
from engine.store.base import SpeakerRecord, verify_token
from engine.stream import PresenterStream, StreamLimits

log = logging.getLogger(__name__)

FinalsMode = Literal["careful", "fast"]

MIN_RATE, MAX_RATE = 8000, 96000
"""Sample rates a presenter may send (the server resamples to 16 kHz)."""


@dataclass(frozen=True, slots=True)
class StartRequest:
    """What a presenter asks for when starting a stream."""

    token: str | None
    sample_rate: int
    language: str | None = None
    """A language code, ``"auto"`` (detect among the session's languages) or None (the
    speaker's own language)."""
    finals: FinalsMode = "careful"
    """``"fast"``: finals decode in the short window (a conversation turn, where someone
    waits for each final)."""
    since: int = 0
    """The newest event ``seq`` the console already holds: its view of the session is
    backfilled from after it (a reconnect, or a Start after Stop, takes only what it missed)."""


def check_credentials(session: Session, token: str | None) -> None:
    """Raise :class:`Refused` unless ``token`` is the session's presenter token."""
    if not token:
        raise Refused(Refusal.NO_CREDENTIALS, "presenter token required")
    if not verify_token(session.record, token):
        raise Refused(Refusal.BAD_CREDENTIALS, "wrong presenter token")


async def speaker_of(session: Session, token: str | None) -> SpeakerRecord:
    """The speaker (the presenter, or a panel's speaker) whose token this is."""
    if not token:
        raise Refused(Refusal.NO_CREDENTIALS, "presenter or speaker token required")
    speaker = await session.speakers.find(token)
    if speaker is None:
        raise Refused(Refusal.BAD_CREDENTIALS, "wrong presenter token")
    return speaker


class Presentation:
    """One live presenter stream and the presenter's own view of the session's events."""

    def __init__(
        self,
        session: Session,
        stream: PresenterStream,
        events: Subscription,
        hub: Hub,
        lag: LagReports,
    ):
        self.session = session
        self.stream = stream
        self.events = events
        """Everything the session publishes, as a listener of its own language sees it (not
        counted as audience). Closed after :meth:`stop`, once it holds the last events."""
        self._hub = hub
        self._lag = lag
        self._next: asyncio.Future[Event] | None = None
        """The event being waited for, kept across the lag reports made meanwhile."""

    async def next_event(self) -> PresenterEvent:
        """What the presenter's transport sends next: the session's next event, or a report
        of this stream's lag when one is due (engine/lag.py). Raises as
        :meth:`Subscription.get` does once the view is closed."""
        while True:
            report = self._lag.report(self.stream.recognizer.backlog, time.monotonic())
            if report is not None:
                return report
            if self._next is None:
                self._next = asyncio.ensure_future(self.events.get())
            done, _ = await asyncio.wait({self._next}, timeout=self._lag.rule.every_s)
            if done:
                event, self._next = self._next, None
                return event.result()

    def feed(self, pcm: bytes) -> None:
        """One message of 16-bit little-endian mono PCM at the declared rate; raises
        :class:`Refused` on bad input (the stream cannot continue)."""
        self.stream.feed(pcm)

    async def stop(self) -> None:
        """Finalise everything said, have every final translated and delivered to this
        process's subscribers; then :attr:`events` ends after the last of them."""
        await self._finalise()
        self.events.queue.close()

    async def release(self) -> None:
        """The transport is gone (a hang-up, a refusal, shutdown): what was said is still
        finalised for the audience; the presenter's view is closed."""
        try:
            await self._finalise()
        finally:
            self._hub.unsubscribe(self.events)
            if self._next is not None:
                self._next.cancel()  # the transport that waited for it is gone

    async def _finalise(self) -> None:
        if not self.stream.finished:
            await self.stream.finish()
        await self.session.drain_translation()
        if self.session.state == "live" and not self.session.live:
            await self.session.set_state("paused")
        await self._hub.settle(self.session.code)  # a shared hub delivers by reading back


class Presenting:
    """Starts and ends presenters' streams in this process."""

    def __init__(
        self,
        registry: SessionRegistry,
        recognition: Recognition,
        hub: Hub,
        *,
        limits: StreamLimits,
        max_live_streams: int,
    ) -> None:
        self._registry = registry
        self._recognition = recognition
        self._hub = hub
        self.limits = limits
        self.max_live_streams = max_live_streams

    def live_streams(self) -> int:
        return self._registry.live_streams()

    def language_of(self, speaker: SpeakerRecord, requested: str | None) -> str:
        """The canonical language a stream will be in, ``"auto"``, or :class:`Refused`."""
        if requested is None:
            return speaker.language
        if requested == AUTO:
            return AUTO
        if not languages.is_known(requested):
            raise Refused(Refusal.UNKNOWN_LANGUAGE, f"unknown language {requested!r}")
        language = languages.normalise(requested)
        if not self._recognition.can_recognise(language):
            raise Refused(Refusal.NO_MODEL, f"no recognition model for {language!r}")
        return language

    async def start(self, session: Session, request: StartRequest) -> Presentation:
        """Open a stream of the speaker whose token the request carries: the session goes
        live and recognises what it is sent."""
        speaker = await speaker_of(session, request.token)
        if not MIN_RATE <= request.sample_rate <= MAX_RATE:
            raise Refused(
                Refusal.BAD_AUDIO, f"sample_rate must be an integer {MIN_RATE}-{MAX_RATE}"
            )
        language = self.language_of(speaker, request.language)
        if self.live_streams() >= self.max_live_streams:
            raise Refused(Refusal.AT_CAPACITY, "server is at its limit of live streams")
        if self._registry.behind():
            raise Refused(
                Refusal.AT_CAPACITY,
                "the server is behind with the streams it has; try again when it catches up",
            )
        stream = await session.open_stream(
            speaker,
            request.sample_rate,
            language,
            self.limits,
            fast_finals=request.finals == "fast",
        )
        events = self._hub.subscribe(session.code, frozenset(), request.since, counted=False)
        stream.start()
        presentation = Presentation(session, stream, events, self._hub, LagReports())
        try:
            await session.set_state("live")
        except BaseException:
            await presentation.release()
            raise
        return presentation

    async def end(self, session: Session, token: str | None) -> None:
        """End the session: finalise a stream still open, then mark it ended; it leaves
        memory after the registry's grace period."""
        check_credentials(session, token)
        await session.finish_streams()
        await session.set_state("ended")
        self._registry.retire(session)

    async def shutdown(self) -> None:
        """Finalise every open stream so nothing said is lost, then close every session."""
        for session in self._registry:
            with contextlib.suppress(Exception):
                await session.finish_streams()
        await self._registry.close()
