"""How a session's events reach its log, its store and its listeners, in that order.

The hub numbers each event (``seq``); a final caption is written to the store before anyone is
offered it, so a final a listener saw survives a crash of the process. Every caption is also
reported to the observer with its latency as the server sees it: from the arrival of the audio
it renders (source captions) or from the publication of the source caption it translates.
"""

from __future__ import annotations

import time
from collections import OrderedDict

from engine.delivery.hub import Hub
from engine.events import Caption, ErrorEvent, Event
from engine.store.base import SessionStore
from engine.telemetry import Observer
from engine.workers import WorkerPool

SOURCE_TIMES_KEPT = 256
"""Publication times of recent source captions kept to date their translations."""


class Publisher:
    """The one way a session's stages publish (the session is its log's single writer)."""

    def __init__(
        self, code: str, hub: Hub, store: SessionStore, store_pool: WorkerPool, observer: Observer
    ) -> None:
        self.code = code
        self._hub = hub
        self._store = store
        self._store_pool = store_pool
        self._observer = observer
        self._source_published: OrderedDict[tuple[int, str], float] = OrderedDict()

    async def publish(self, event: Event, *, arrived: float | None = None) -> Event:
        """Number, store (finals) and fan out ``event``; return it numbered. ``arrived``:
        when the audio a source caption ends at arrived (``time.monotonic``)."""
        numbered = await self._hub.emit(self.code, event, self._store_final)
        if isinstance(numbered, Caption):
            self._observe(numbered, arrived)
        elif isinstance(numbered, ErrorEvent):
            self._observer.error("session")
        return numbered

    async def _store_final(self, caption: Caption) -> None:
        await self._store_pool.run(self._store.append_final, self.code, caption)

    def _observe(self, caption: Caption, arrived: float | None) -> None:
        if caption.rev:  # a person's correction: no recognition or translation latency
            self._observer.caption(caption, None)
            return
        now = time.monotonic()
        key = (caption.segment, caption.state)
        if caption.source:
            self._source_published[key] = now
            while len(self._source_published) > SOURCE_TIMES_KEPT:
                self._source_published.popitem(last=False)
            latency = None if arrived is None else now - arrived
        else:
            published = self._source_published.get(key)
            latency = None if published is None else now - published
        self._observer.caption(caption, latency)
