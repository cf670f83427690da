"""The session hub on Redis: several processes or machines serve one session together.

Any node may hold the presenter (recognition, translation and speech run there) and any
node may hold listeners. Per session, Redis keeps (layout in :mod:`engine.delivery.redis_keys`):

- one **event stream** (``XADD`` with an approximate ``MAXLEN``): every caption, state and
  error event, entry id ``<seq>-0`` (entry fields in :mod:`engine.delivery.redis_entries`);
  spoken-translation audio goes to a second, shorter stream (header JSON plus the binary
  PCM), since it is live only and much larger;
- the **seq counter**: :meth:`RedisHub.emit` runs one Lua script that takes the next ``seq``
  (``INCR``), appends the entry and, for a final, adds it to the shared finals set (the
  :class:`engine.store.redis.RedisSessionStore`), atomically. So stream order is ``seq``
  order on every node even when two nodes emit at once (a listener's ``since`` can never
  skip an event that arrives later with a lower number), and a final is stored before any
  node can read it. The ``persist`` callback of :meth:`Hub.emit` is therefore not called:
  the script is the store write;
- each node's **audience** of the session, kept by the hub's
  :class:`engine.delivery.redis_audience.SharedAudience`: ``listener_count``,
  ``wanted_languages`` and ``wanted_speech`` are the union over live nodes, so the
  presenter's node translates and speaks exactly what listeners anywhere asked for.

Every node runs one reader task: a blocking ``XREAD`` over the streams of every session it
has open, from the last entry it delivered. Each entry goes into the node's
:class:`engine.delivery.hub.SessionLog` (backfill for ``since``) and to the node's subscribers whose
``last_seq`` is lower, so a listener that moves to another node with ``since`` gets each
event once. The emitting node delivers its own events through the same read, in order.
Audio entries are offered only to subscribers present when they arrive, never backfilled.
What the reader and the audience task learn of other nodes (state changes, term lists,
corrections, audience changes) is fed to :meth:`RedisHub.remote_changes`
(:mod:`engine.delivery.redis_changes`).

Overflow policies: listener queues as in :mod:`engine.delivery.hub`; the streams are trimmed
to about ``stream_maxlen`` / ``audio_maxlen`` entries (finals stay in the finals set for
backfill and transcripts, so trimming loses only old drafts and states).

Redis unavailable (reconnect policy): the reader and the audience task retry with
exponential backoff (0.05 s doubling to 2 s, jittered) and resume from their cursors, so
nothing in the stream is missed; ``unavailable_reason`` says why meanwhile (``/readyz`` 503;
:mod:`engine.delivery.redis_connection`). :meth:`emit` retries the same way for up to
``outage_s`` (the presenter's pipeline waits; the recogniser skips drafts while it is
behind) and then raises :class:`HubUnavailable`. A retried emit whose first attempt reached
Redis but lost its reply is recognised by its event id and not appended twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.delivery.fanout import Fanout, FanoutSubscribers
from engine.delivery.hub import (
    Corrected,
    Persist,
    QuestionFollowed,
    RemoteChange,
    TermsFollowed,
)
from engine.delivery.redis_audience import SharedAudience
from engine.delivery.redis_changes import ChangeFeed
from engine.delivery.redis_connection import REDIS_ERRORS, Reachability, connect_async
from engine.delivery.redis_entries import decode_entry, entry_body, stream_items
from engine.delivery.redis_keys import Backoff, code_of, session_key
from engine.events import (
    Caption,
    Event,
    Question,
    SpeechAudio,
    StateChange,
    TermsChanged,
    with_seq,
)
from engine.store.redis import final_body

log = logging.getLogger(__name__)

# KEYS: seq, events, audio, finals, event id. ARGV: floor, ts, body, kind, maxlen, node,
# final body, pcm, id ttl.
_EMIT = """
local done = redis.call('GET', KEYS[5])
if done then return tonumber(done) end
local floor = tonumber(ARGV[1])
for i = 2, 3 do
  local top = redis.call('XREVRANGE', KEYS[i], '+', '-', 'COUNT', 1)
  if top[1] then
    local id = tonumber(string.match(top[1][1], '^(%d+)'))
    if id > floor then floor = id end
  end
end
local seq = redis.call('INCR', KEYS[1])
if seq <= floor then
  seq = floor + 1
  redis.call('SET', KEYS[1], seq)
end
local entry = '{"seq":' .. seq .. ',"ts":' .. ARGV[2] .. ',' .. ARGV[3]
if ARGV[4] == 'audio' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], seq .. '-0',
             'e', entry, 'n', ARGV[6], 'pcm', ARGV[8])
else
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], seq .. '-0', 'e', entry, 'n', ARGV[6])
  if ARGV[4] == 'final' then
    redis.call('ZADD', KEYS[4], seq, '{"seq":' .. seq .. ',"ts":' .. ARGV[2] .. ',' .. ARGV[7])
  end
end
redis.call('SET', KEYS[5], seq, 'EX', ARGV[9])
return seq
"""


class HubUnavailable(RuntimeError):
    """Redis stayed unreachable for longer than the hub's ``outage_s``."""


@dataclass(frozen=True, slots=True)
class RedisHubConfig:
    stream_maxlen: int = 5000
    """Approximate entries kept per event stream (finals live on in the finals set)."""
    audio_maxlen: int = 200
    """Approximate entries kept per audio stream (live only)."""
    block_ms: int = 200
    """Longest blocking XREAD; a newly opened session joins the read after at most this."""
    read_count: int = 500
    heartbeat_s: float = 1.0
    """How often a node rewrites its audience entries and reads the others'."""
    stale_s: float = 10.0
    """Audience entries older than this are a dead node's and ignored."""
    outage_s: float = 60.0
    """How long :meth:`RedisHub.emit` retries before it gives up."""
    settle_timeout_s: float = 30.0
    event_id_ttl_s: int = 600


class RedisHub(FanoutSubscribers):
    """:class:`engine.delivery.hub.Hub` shared by every node through one Redis (policies above).

    Local fan-out (queues, backfill from the session log, language switches) is a
    :class:`engine.delivery.fanout.Fanout`, as in the in-process hub; only :meth:`emit`,
    delivery and the audience (a :class:`engine.delivery.redis_audience.SharedAudience` on
    the same fan-out) go through Redis.
    """

    def __init__(
        self,
        url: str,
        *,
        max_queue: int = 1000,
        node: str | None = None,
        config: RedisHubConfig | None = None,
    ) -> None:
        self.config = config or RedisHubConfig()
        self.node = node or uuid.uuid4().hex[:12]
        self._redis = connect_async(url, block_ms=self.config.block_ms)
        self._emit_script = self._redis.register_script(_EMIT)
        self._reachability = Reachability(self.node)
        self._changes = ChangeFeed()
        """What this node learns of other nodes (:meth:`remote_changes`)."""
        audience_wake = asyncio.Event()
        self.fanout = Fanout(max_queue, on_change=audience_wake.set)
        self.audience = SharedAudience(
            self._redis,
            self.fanout,
            audience_wake,
            node=self.node,
            reachability=self._reachability,
            on_remote_change=self._changes.audience,
            heartbeat_s=self.config.heartbeat_s,
            stale_s=self.config.stale_s,
        )
        self._cursors: dict[str, bytes] = {}
        self._audio_cursors: dict[str, bytes | None] = {}
        self._floors: dict[str, int] = {}
        self._opened_at: dict[str, float] = {}
        self._emitted: dict[tuple[str, bool], int] = {}
        self._delivered: dict[tuple[str, bool], int] = {}
        self._waiters: list[tuple[str, asyncio.Future[None]]] = []
        self._streams_changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False

    # --- lifecycle and health ------------------------------------------------------------

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="redis-hub-reader"),
            asyncio.create_task(self.audience.run(), name="redis-hub-audience"),
        ]

    async def close(self) -> None:
        """Stop the reader and the audience task between two commands (cancelling a
        blocked ``XREAD`` can hang in redis-py), remove this node's audience entries."""
        self._closing = True
        self._changes.close()
        self._streams_changed.set()
        self.audience.stop()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=self.config.block_ms / 1000 + 3)
            for task in stuck:
                task.cancel()
        self._tasks = []
        await self.audience.withdraw()
        await self._redis.aclose()

    def unavailable_reason(self) -> str | None:
        return self._reachability.unavailable_reason()

    # --- sessions --------------------------------------------------------------------------

    def open(self, code: str, last_seq: int = 0, finals: Iterable[Caption] = ()) -> None:
        finals = list(finals)
        if not self.fanout.open(code, last_seq, finals):
            return
        # The log holds the stored finals; read the stream from the newest of them on.
        newest = max((c.seq for c in finals), default=0)
        self._cursors[code] = f"{newest}-0".encode()
        self._audio_cursors[code] = None
        self._floors[code] = max(last_seq, newest)
        self._opened_at[code] = time.time()
        self._streams_changed.set()

    def drop(self, code: str) -> None:
        self.fanout.drop(code)
        for table in (self._cursors, self._audio_cursors, self._floors, self._opened_at):
            table.pop(code, None)
        self.audience.forget(code)

    # --- emitting --------------------------------------------------------------------------

    async def emit(self, code: str, event: Event, persist: Persist | None = None) -> Event:
        """Number, store (finals) and append ``event`` in one script; see the module
        docstring for why ``persist`` is not called and for the retry policy."""
        audio = isinstance(event, SpeechAudio)
        final = isinstance(event, Caption) and event.is_final
        kind = "audio" if audio else "final" if final else "event"
        body = entry_body(event)
        stored = final_body(event) if isinstance(event, Caption) and final else ""
        pcm = event.pcm if isinstance(event, SpeechAudio) else b""
        maxlen = self.config.audio_maxlen if audio else self.config.stream_maxlen
        keys = [session_key(code, part) for part in ("seq", "events", "audio", "finals")] + [
            session_key(code, f"e:{uuid.uuid4().hex}")
        ]
        backoff = Backoff()
        deadline = time.monotonic() + self.config.outage_s
        while True:
            ts = time.time()
            args: list[bytes | str | int | float] = [
                self._floors.get(code, 0),
                repr(ts),
                body,
                kind,
                maxlen,
                self.node,
                stored,
                pcm,
                self.config.event_id_ttl_s,
            ]
            try:
                seq = int(await self._emit_script(keys=keys, args=args))
                break
            except REDIS_ERRORS as exc:
                self._reachability.failed(exc)
                if time.monotonic() > deadline:
                    raise HubUnavailable(
                        f"Redis unreachable for {self.config.outage_s:.0f} s"
                    ) from exc
                await backoff.sleep()
        self._reachability.succeeded()
        self._floors[code] = max(self._floors.get(code, 0), seq)
        key = (code, audio)
        self._emitted[key] = max(self._emitted.get(key, 0), seq)
        return with_seq(event, seq, ts)

    async def settle(self, code: str) -> None:
        """Wait until the reader has delivered every event this node emitted for ``code``
        (at most ``settle_timeout_s``)."""
        if self._settled(code):
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((code, future))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.config.settle_timeout_s):
                await future

    def _settled(self, code: str) -> bool:
        if code not in self.fanout:
            return True
        return all(
            self._delivered.get((code, audio), 0) >= self._emitted.get((code, audio), 0)
            for audio in (False, True)
        )

    # --- reading ---------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        backoff = Backoff()
        while not self._closing:
            if not self._cursors:
                self._streams_changed.clear()
                await self._streams_changed.wait()
                continue
            self._streams_changed.clear()
            try:
                await self._resolve_audio_cursors()
                streams: dict[Any, Any] = {}
                for code, cursor in self._cursors.items():
                    streams[session_key(code, "events")] = cursor
                    audio_cursor = self._audio_cursors.get(code)
                    if audio_cursor is not None:  # None: opened during the resolve
                        streams[session_key(code, "audio")] = audio_cursor
                reply = await self._redis.xread(
                    streams, count=self.config.read_count, block=self.config.block_ms
                )
            except REDIS_ERRORS as exc:
                self._reachability.failed(exc)
                await backoff.sleep()
                continue
            backoff.reset()
            self._reachability.succeeded()
            for key, entries in stream_items(reply):
                self._take(key, entries)
            self._wake_settled()

    async def _resolve_audio_cursors(self) -> None:
        """Audio is live only: a newly opened session's audio is read from its newest entry."""
        for code in [c for c, cursor in self._audio_cursors.items() if cursor is None]:
            top = await self._redis.xrevrange(session_key(code, "audio"), count=1)
            if code in self._audio_cursors:
                newest = top[0][0] if top else b"0-0"
                self._audio_cursors[code] = newest.encode() if isinstance(newest, str) else newest

    def _take(self, key: bytes, entries: Sequence[tuple[bytes, Any]]) -> None:
        text = key.decode()
        code = code_of(text)
        audio = text.endswith(":audio")
        for entry_id, fields in entries:
            if code not in self.fanout:
                return
            if audio:
                self._audio_cursors[code] = entry_id
            else:
                self._cursors[code] = entry_id
            try:
                event = decode_entry(fields)
            except (KeyError, TypeError, ValueError):
                log.exception("undecodable entry %s in %s", entry_id, text)
                continue
            self._delivered[(code, audio)] = max(self._delivered.get((code, audio), 0), event.seq)
            node = fields.get(b"n", b"").decode()
            self._deliver(code, event, node)

    def _deliver(self, code: str, event: Event, node: str) -> None:
        if isinstance(event, SpeechAudio) and event.ts < self._opened_at.get(code, 0.0):
            return  # audio from before this node followed the session: not live any more
        self.fanout.deliver(code, event, only_newer=True)
        if node == self.node:
            return
        if isinstance(event, StateChange):
            self._changes.state(code, event.state)
            self.audience.look_now()  # its audience probably changed
        elif isinstance(event, TermsChanged):
            self._changes.edit(TermsFollowed(code, event.terms))
        elif isinstance(event, Caption) and event.source and event.rev:
            self._changes.edit(Corrected(code, event))
        elif isinstance(event, Question):
            self._changes.edit(QuestionFollowed(code, event))

    def _wake_settled(self) -> None:
        waiting, self._waiters = self._waiters, []
        for code, future in waiting:
            if future.done():
                continue
            if self._settled(code):
                future.set_result(None)
            else:
                self._waiters.append((code, future))

    # --- subscribers and the audience -----------------------------------------------------

    def listener_count(self, code: str) -> int:
        return self.audience.listener_count(code)

    def listeners_by_language(self, code: str) -> Mapping[str, int]:
        return self.audience.listeners_by_language(code)

    def wanted_languages(self, code: str) -> frozenset[str]:
        return self.audience.wanted_languages(code)

    def wanted_speech(self, code: str) -> frozenset[str]:
        return self.audience.wanted_speech(code)

    def deepest_queue(self) -> int:
        return self.fanout.deepest_queue()

    @property
    def replaced_drafts(self) -> int:
        return self.fanout.replaced_drafts

    def remote_changes(self) -> AsyncIterator[RemoteChange]:
        return aiter(self._changes)
