"""A session's audience: what it is told of itself, and what is made for it.

Listeners join, leave and switch language; captions are pushed out (YouTube, Zoom). Each
change sets the languages the session translates into and speaks to exactly those someone
reads, hears or is pushed now, and the audience size is announced in one state event per
``ANNOUNCE_INTERVAL`` however many phones join at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from engine.delivery.hub import Hub
from engine.delivery.push import PushStatus, PushTarget, SessionPushes
from engine.delivery.push_formats import Service
from engine.events import SessionState, StateChange, language_counts
from engine.speech.stage import SessionSpeaker
from engine.stream import Publish
from engine.translation.stage import SessionTranslator

ANNOUNCE_INTERVAL = 0.5
"""Seconds over which audience-size changes are folded into one state event."""


class SessionAudience:
    """The audience of one session (module docstring)."""

    def __init__(
        self,
        code: str,
        hub: Hub,
        translators: Mapping[str, SessionTranslator],
        speaker: SessionSpeaker | None,
        pushes: SessionPushes | None,
        publish: Publish,
        state: Callable[[], SessionState],
    ) -> None:
        """``speaker``: the speech stage, or None where the process speaks nothing.
        ``pushes``: where captions are pushed out, or None where it pushes nothing.
        ``publish``: the session's publish. ``state``: the session's state now."""
        self._code = code
        self._hub = hub
        self._translators = translators
        self._speaker = speaker
        self._pushes = pushes
        self._publish = publish
        self._state = state
        self._announcer: asyncio.Task[None] | None = None

    async def announce(self) -> None:
        """Publish the current state and audience size, and translate into exactly the
        languages someone reads now (call after joins, leaves and language switches)."""
        self.follow()
        hub = self._hub
        counts = language_counts(hub.listeners_by_language(self._code))
        await self._publish(StateChange(self._state(), hub.listener_count(self._code), counts))

    def follow(self) -> None:
        """Translate into, and speak, exactly the languages the audience asks for now."""
        hub = self._hub
        wanted = hub.wanted_languages(self._code)
        for translator in self._translators.values():
            translator.set_languages(wanted)
        if self._speaker is not None:
            self._speaker.set_languages(hub.wanted_speech(self._code))

    def changed(self) -> None:
        """Listeners joined, left or switched language: update translation languages now and
        announce the new audience size once per ``ANNOUNCE_INTERVAL`` (a thousand phones
        joining at once must not send everyone a thousand counts)."""
        self.follow()
        if self._announcer is None or self._announcer.done():
            self._announcer = asyncio.create_task(self._announce_later())

    async def _announce_later(self) -> None:
        await asyncio.sleep(ANNOUNCE_INTERVAL)
        await self.announce()

    async def push_to(self, target: PushTarget) -> PushStatus:
        """Push this session's finals in ``target.lang`` to ``target`` from now on (its
        language is translated from now on too)."""
        if self._pushes is None:
            raise RuntimeError("this process pushes no captions")
        status = await self._pushes.set(target)
        self.follow()
        return status

    async def stop_push(self, service: Service) -> bool:
        """Stop pushing to ``service``; whether it was pushing."""
        stopped = self._pushes is not None and await self._pushes.remove(service)
        self.follow()
        return stopped

    async def close(self) -> None:
        """Stop announcing and pushing."""
        if self._announcer is not None:
            self._announcer.cancel()
        if self._pushes is not None:
            await self._pushes.close()
