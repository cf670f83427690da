"""What a node of the Redis hub learns of the other nodes, as a feed
(:meth:`engine.delivery.redis.RedisHub.remote_changes`).

The hub's reader adds the state changes, term lists, corrections and questions from the
floor that other nodes emitted; the audience task (:mod:`engine.delivery.redis_audience`)
adds a session whose audience on other nodes changed. Overflow policy: the feed holds at
most one audience change per session (they fold into one: the consumer re-reads the whole
audience anyway); state changes, terms, corrections and questions keep their order and are
all kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from engine.delivery.hub import (
    AudienceChanged,
    Corrected,
    QuestionFollowed,
    RemoteChange,
    StateChanged,
    TermsFollowed,
)
from engine.events import SessionState


class ChangeFeed:
    """What this node learnt of other nodes, waiting to be taken: audience changes fold
    into one per session; state changes, terms and corrections keep their order."""

    def __init__(self) -> None:
        self._audience: dict[str, None] = {}
        self._states: list[StateChanged | TermsFollowed | Corrected | QuestionFollowed] = []
        self._ready = asyncio.Event()
        self._closed = False

    def audience(self, code: str) -> None:
        self._audience[code] = None
        self._ready.set()

    def state(self, code: str, state: SessionState) -> None:
        self._states.append(StateChanged(code, state))
        self._ready.set()

    def edit(self, change: TermsFollowed | Corrected | QuestionFollowed) -> None:
        self._states.append(change)
        self._ready.set()

    def close(self) -> None:
        self._closed = True
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[RemoteChange]:
        while not self._closed:
            await self._ready.wait()
            self._ready.clear()
            states, self._states = self._states, []
            codes, self._audience = list(self._audience), {}
            for change in states:
                yield change
            for code in codes:
                yield AudienceChanged(code)
