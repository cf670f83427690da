"""Fan-out of a session's events to its listeners, with backfill.

A session publishes each event once; the hub numbers it (``seq``), keeps it in the session's
log and offers it to every subscriber's bounded queue. Publishing never waits for a listener.

Listener queue overflow policy (:class:`ListenerQueue`):
- a newer draft of a (segment, language) replaces the older one still queued, and a newer
  state event replaces an older queued one;
- a final removes the queued drafts of its segment and language, and is never dropped; a
  corrected final (``rev`` > 0, docs/protocol.md) also removes a queued older final of its
  line, so a correction costs a listener at most one event per line it reads;
- a newer term list replaces an older one still queued;
- audio chunks (spoken translation) are never replaced or dropped one by one: the speech
  stage already keeps each language's speech within a bound of the live speaker, so a
  listener whose queue still overflows is too slow for audio;
- a listener with more than ``max_events`` live events waiting is too far behind: its queue
  is closed and the socket is closed with a reason; the client reconnects with ``since`` and
  backfills from the log (captions only: audio is live and never backfilled);
- the backfill (what a listener joining with ``since``, or choosing another language, has
  not seen: the log's finals and newest drafts) waits apart, ahead of the live events, and
  does not count against ``max_events``. It is the log's own events, already coalesced, and
  a session of an hour holds more finals than the bound: counted, it closed every late
  listener before its first event, and the reconnect with the same ``since`` met the same.
  Its reader lets other tasks run every ``BACKFILL_BATCH`` events of it.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from engine.events import (
    Caption,
    Event,
    Question,
    SessionState,
    Shedding,
    SpeechAudio,
    StateChange,
    TermsChanged,
    with_seq,
)
from engine.terms import Term

BACKFILL_BATCH = 32
"""Backfill events ``ListenerQueue.get`` hands out before it lets other tasks run. A socket
send rarely waits, so a listener's task would hold the event loop for its whole backfill, and
a thousand listeners joining an hour in held everyone already listening up to 16 s
(docs/metrics.md, "Late joiners")."""


class ListenerTooSlow(Exception):
    """The listener fell too far behind; reconnect with ``since`` to backfill."""


class SubscriptionClosed(Exception):
    """The subscription was closed (session dropped or listener left)."""


def wants(event: Event, langs: frozenset[str], audio: bool = False) -> bool:
    """Whether a listener reading ``langs`` receives ``event``: every source caption (for the
    bilingual view), translations in its languages, spoken translation in its languages if
    it turned audio on, and every other event."""
    if isinstance(event, Caption):
        return event.source or event.lang in langs
    if isinstance(event, SpeechAudio):
        return audio and event.lang in langs
    return True


class ListenerQueue:
    """A bounded queue of events for one listener (policy in the module docstring)."""

    def __init__(
        self, max_events: int = 1000, on_replace: Callable[[], None] | None = None
    ) -> None:
        self.max_events = max_events
        self._on_replace = on_replace
        self._items: deque[Event] = deque()
        self._backfill: deque[Event] = deque()
        self._backfill_taken = 0
        self._ready = asyncio.Event()
        self._overflowed = False
        self._closed = False
        self.replaced_drafts = 0

    def __len__(self) -> int:
        """Live events waiting (what ``max_events`` bounds; the backfill is apart)."""
        return len(self._items)

    def backfill(
        self, events: Iterable[Event], keep: Callable[[Event], bool] | None = None
    ) -> None:
        """Queue ``events`` from the session's log ahead of the live ones, unbounded (the
        module docstring says why). ``keep``: which of the backfill still waiting stays (a
        language switch drops the languages no longer read, so switching back and forth
        never holds more than the log)."""
        if self._overflowed or self._closed:
            return
        if keep is not None:
            self._backfill = deque(e for e in self._backfill if keep(e))
        self._backfill.extend(events)
        if self._backfill:
            self._ready.set()

    def put(self, event: Event) -> None:
        if self._overflowed or self._closed:
            return
        if isinstance(event, StateChange | Shedding | TermsChanged):
            # Only the newest state and audience size (or shedding level, or terms) matter.
            for older in [i for i in self._items if type(i) is type(event)]:
                self._items.remove(older)
        elif isinstance(event, Caption):
            key = (event.segment, event.lang)
            stale = [
                item
                for item in self._items
                if isinstance(item, Caption)
                and (item.segment, item.lang) == key
                and (not item.is_final or (event.is_final and event.rev > item.rev))
            ]
            for item in stale:
                self._items.remove(item)
                self.replaced_drafts += 1
                if self._on_replace is not None:
                    self._on_replace()
        self._items.append(event)
        if len(self._items) > self.max_events:
            self._overflowed = True
            self._items.clear()
            self._backfill.clear()
        self._ready.set()

    async def get(self) -> Event:
        if self._backfill:
            self._backfill_taken += 1
            if self._backfill_taken % BACKFILL_BATCH == 0:
                await asyncio.sleep(0)  # a send rarely waits: let the others' tasks run
        while not (self._backfill or self._items):
            if self._overflowed:
                raise ListenerTooSlow("too far behind")
            if self._closed:
                raise SubscriptionClosed()
            self._ready.clear()
            await self._ready.wait()
        return (self._backfill or self._items).popleft()

    def close(self) -> None:
        self._closed = True
        self._ready.set()


@dataclass(eq=False)
class Subscription:
    """One listener's view of a session."""

    code: str
    langs: frozenset[str]
    queue: ListenerQueue = field(default_factory=ListenerQueue)
    last_seq: int = 0
    counted: bool = True
    audio: bool = False
    """Whether this listener receives spoken translation (``audio=1``)."""

    async def get(self) -> Event:
        event = await self.queue.get()
        self.last_seq = max(self.last_seq, event.seq)
        return event

    def offer(self, event: Event) -> None:
        if isinstance(event, Question) and self.counted:
            return  # questions from the floor go to the moderator's views only
        if wants(event, self.langs, self.audio):
            self.queue.put(event)


def presenter_first(subs: Iterable[Subscription]) -> list[Subscription]:
    """Subscribers in the order to offer them an event: the presenter's own views (not
    counted as audience) before the audience. Each offer wakes its sender task, and tasks run
    in the order they were woken, so the presenter's socket is written before any of the
    audience's (a share of up to 500 sends otherwise). The load bench's presenter draft p50
    did not move with this (0.18 -> 0.22 s loaded, as before): that delay is in the
    recogniser's steps, not in the fan-out."""
    ordered = list(subs)
    return [s for s in ordered if not s.counted] + [s for s in ordered if s.counted]


class SessionLog:
    """The numbered history of one session: the newest revision of every final line, the
    newest draft of each open (segment, language), the newest state and term list. Enough
    to backfill any listener: a line corrected after a listener saw it comes again in its
    newest revision (its ``seq`` is newer), one it has not seen comes once, corrected."""

    def __init__(self, last_seq: int = 0, finals: Iterable[Caption] = ()) -> None:
        self.seq = last_seq
        self._lines: dict[tuple[int, str], Caption] = {}
        for caption in sorted(finals, key=lambda c: c.seq):
            self._keep_final(caption)
        self._drafts: dict[tuple[int, str], Caption] = {}
        self.state: StateChange | None = None
        self.terms: TermsChanged | None = None

    @property
    def finals(self) -> list[Caption]:
        """The newest revision of every final line, in ``seq`` order."""
        return sorted(self._lines.values(), key=lambda c: c.seq)

    def _keep_final(self, caption: Caption) -> None:
        key = (caption.segment, caption.lang)
        current = self._lines.get(key)
        if current is None or (caption.rev, caption.seq) > (current.rev, current.seq):
            self._lines[key] = caption

    def number(self, event: Event) -> Event:
        """Give ``event`` the next ``seq`` (the session is this log's only writer)."""
        self.seq += 1
        return with_seq(event, self.seq, time.time())

    def append(self, numbered: Event) -> Event:
        """Keep an already numbered event."""
        if numbered.seq <= 0:
            raise ValueError("append takes numbered events; use number() first")
        self.seq = max(self.seq, numbered.seq)
        if isinstance(numbered, SpeechAudio):
            return numbered  # live only: audio is never backfilled
        if isinstance(numbered, Caption):
            key = (numbered.segment, numbered.lang)
            if numbered.is_final:
                self._keep_final(numbered)
                self._drafts.pop(key, None)
            elif key not in self._lines:
                self._drafts[key] = numbered
        elif isinstance(numbered, StateChange):
            self.state = numbered
        elif isinstance(numbered, TermsChanged):
            self.terms = numbered
        return numbered

    def replay(self, since: int, langs: frozenset[str]) -> list[Event]:
        """What a listener that has seen everything up to ``since`` needs, in seq order."""
        events: list[Event] = [c for c in self._lines.values() if c.seq > since and wants(c, langs)]
        events.extend(d for d in self._drafts.values() if d.seq > since and wants(d, langs))
        for latest in (self.state, self.terms):
            if latest is not None and latest.seq > since:
                events.append(latest)
        return sorted(events, key=lambda e: e.seq)


@dataclass(frozen=True, slots=True)
class AudienceChanged:
    """Listeners on another node joined, left or switched language in session ``code``."""

    code: str


@dataclass(frozen=True, slots=True)
class StateChanged:
    """Another node published a state change of session ``code``."""

    code: str
    state: SessionState


@dataclass(frozen=True, slots=True)
class TermsFollowed:
    """Another node published a new term list of session ``code``."""

    code: str
    terms: tuple[Term, ...]


@dataclass(frozen=True, slots=True)
class Corrected:
    """Another node published a person's correction of a source final of ``code``."""

    code: str
    caption: Caption


@dataclass(frozen=True, slots=True)
class QuestionFollowed:
    """Another node held a question from the floor of ``code``, or decided one."""

    code: str
    question: Question


RemoteChange = AudienceChanged | StateChanged | TermsFollowed | Corrected | QuestionFollowed
"""What a shared hub learns of other nodes (:meth:`Hub.remote_changes`)."""


Persist = Callable[[Caption], Awaitable[None]]
"""Stores a numbered final caption (the session's store write)."""


class Hub(Protocol):
    """Where sessions publish and listeners subscribe (in-process, or Redis across nodes)."""

    def open(self, code: str, last_seq: int = 0, finals: Iterable[Caption] = ()) -> None:
        """Make ``code`` known, resuming numbering and history after a restart."""
        ...

    async def emit(self, code: str, event: Event, persist: Persist | None = None) -> Event:
        """Number ``event`` (session-wide ``seq``), have ``persist`` store it if it is a
        final, then log it and offer it to every subscriber, in that order: a final is
        durable before any listener can see it. Returns the numbered event. Never waits for
        a listener (a hub on a network may wait for its server: see its policy)."""
        ...

    async def settle(self, code: str) -> None:
        """Wait until every event this process emitted for ``code`` has been offered to
        this process's subscribers (immediate in process; a networked hub reads back)."""
        ...

    async def start(self) -> None:
        """Start background work (connections, readers); called once by the app."""
        ...

    async def close(self) -> None:
        """Stop background work and release connections."""
        ...

    def unavailable_reason(self) -> str | None:
        """Why the hub cannot deliver events now (shown by ``/readyz``); ``None`` if it can."""
        ...

    def subscribe(
        self,
        code: str,
        langs: frozenset[str],
        since: int = 0,
        *,
        counted: bool = True,
        audio: bool = False,
    ) -> Subscription:
        """A subscription whose queue already holds the backfill after ``since``;
        ``counted=False`` for the presenter's own view (not an audience member);
        ``audio=True`` to receive spoken translation in ``langs``."""
        ...

    def unsubscribe(self, subscription: Subscription) -> None: ...

    def set_languages(self, subscription: Subscription, langs: frozenset[str]) -> None:
        """Switch a listener's languages, backfilling the finals in the new ones."""
        ...

    def set_audio(self, subscription: Subscription, enabled: bool) -> None:
        """Turn a listener's spoken translation on or off."""
        ...

    def listener_count(self, code: str) -> int: ...

    def listeners_by_language(self, code: str) -> Mapping[str, int]:
        """How many listeners of ``code`` follow each language (the presenter's console
        shows it)."""
        ...

    def deepest_queue(self) -> int:
        """The most events waiting in any one subscriber's queue of this process."""
        ...

    @property
    def replaced_drafts(self) -> int:
        """Drafts replaced in this process's listener queues by newer ones."""
        ...

    def last_seq(self, code: str) -> int:
        """The newest ``seq`` this process knows for ``code`` (a live-only subscriber, such
        as a WebRTC audio track, subscribes from there)."""
        ...

    def wanted_languages(self, code: str) -> frozenset[str]:
        """Every language some subscriber of ``code`` reads (what to translate into)."""
        ...

    def wanted_speech(self, code: str) -> frozenset[str]:
        """Every language some subscriber of ``code`` listens to with audio on (what to
        synthesise)."""
        ...

    def drop(self, code: str) -> None:
        """Forget a session (it left memory); its subscribers are closed."""
        ...

    def remote_changes(self) -> AsyncIterator[RemoteChange]:
        """What other nodes did to sessions this node holds, as it learns of it (a hub of
        one process yields nothing and ends)."""
        ...
