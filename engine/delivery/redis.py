"""The session hub on Redis: several processes or machines serve one session together.

Any node may hold the presenter (recognition, translation and speech run there) and any
node may hold listeners. Per session, Redis keeps (layout in :mod:`engine.delivery.redis_keys`):

- one **event stream** (``XADD`` with an approximate ``MAXLEN``): every caption, state and
  error event, entry id ``<seq>-0``; spoken-translation audio goes to a second, shorter
  stream (header JSON plus the binary PCM), since it is live only and much larger;
- the **seq counter**: :meth:`RedisHub.emit` runs one Lua script that takes the next ``seq``
  (``INCR``), appends the entry and, for a final, adds it to the shared finals set (the
  :class:`engine.redis_store.RedisSessionStore`), atomically. So stream order is ``seq``
  order on every node even when two nodes emit at once (a listener's ``since`` can never
  skip an event that arrives later with a lower number), and a final is stored before any
  node can read it. The ``persist`` callback of :meth:`Hub.emit` is therefore not called:
  the script is the store write;
- each node's **audience** of the session (listener count, languages read, languages heard
  with audio on), rewritten every ``heartbeat_s`` and at once on a change; entries older
  than ``stale_s`` (a node that died) are ignored. ``listener_count``, ``wanted_languages``
  and ``wanted_speech`` are the union over live nodes, so the presenter's node translates
  and speaks exactly what listeners anywhere asked for; :meth:`RedisHub.remote_changes`
  yields a change when another node's audience of a session changes.

Every node runs one reader task: a blocking ``XREAD`` over the streams of every session it
has open, from the last entry it delivered. Each entry goes into the node's
:class:`engine.delivery.hub.SessionLog` (backfill for ``since``) and to the node's subscribers whose
``last_seq`` is lower, so a listener that moves to another node with ``since`` gets each
event once. The emitting node delivers its own events through the same read, in order.
Audio entries are offered only to subscribers present when they arrive, never backfilled.

Overflow policies: listener queues as in :mod:`engine.delivery.hub`; the streams are trimmed
to about ``stream_maxlen`` / ``audio_maxlen`` entries (finals stay in the finals set for
backfill and transcripts, so trimming loses only old drafts and states).

Redis unavailable (reconnect policy): the reader and the audience task retry with
exponential backoff (0.05 s doubling to 2 s, jittered) and resume from their cursors, so
nothing in the stream is missed; ``unavailable_reason`` says why meanwhile (``/readyz`` 503).
:meth:`emit` retries the same way for up to ``outage_s`` (the presenter's pipeline waits;
the recogniser skips drafts while it is behind) and then raises :class:`HubUnavailable`.
A retried emit whose first attempt reached Redis but lost its reply is recognised by its
event id and not appended twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.retry import Retry

from engine.delivery.fanout import Fanout, FanoutSubscribers
from engine.delivery.hub import (
    AudienceChanged,
    Corrected,
    Persist,
    RemoteChange,
    StateChanged,
    TermsFollowed,
)
from engine.delivery.redis_keys import Backoff, code_of, session_key
from engine.events import (
    Caption,
    Event,
    LanguageCounts,
    SessionState,
    SpeechAudio,
    StateChange,
    TermsChanged,
    from_dict,
    language_counts,
    to_dict,
    with_seq,
)
from engine.store.redis import final_body

log = logging.getLogger(__name__)

REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError)
"""Errors that mean Redis is unreachable or restarting (including ``LOADING``)."""

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
    redis.call('ZADD', KEYS[4], seq, '{"seq":' .. seq .. ',' .. ARGV[7])
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


@dataclass(frozen=True, slots=True)
class Audience:
    """What the listeners of a session on some nodes want, and how many follow each
    language (``by_language``, as :data:`engine.events.LanguageCounts`)."""

    count: int = 0
    langs: frozenset[str] = frozenset()
    speech: frozenset[str] = frozenset()
    by_language: LanguageCounts = ()

    def __or__(self, other: Audience) -> Audience:
        counts = Counter(dict(self.by_language))
        counts.update(dict(other.by_language))
        return Audience(
            self.count + other.count,
            self.langs | other.langs,
            self.speech | other.speech,
            language_counts(counts),
        )

    def to_json(self, at: float) -> str:
        data = {"n": self.count, "l": sorted(self.langs), "s": sorted(self.speech), "t": at}
        return json.dumps({**data, "c": dict(self.by_language)})

    @staticmethod
    def from_json(text: bytes | str) -> tuple[Audience, float]:
        """An entry a node wrote (``c``, the counts by language, is absent in entries of
        nodes that predate it)."""
        data = json.loads(text)
        audience = Audience(
            int(data["n"]),
            frozenset(data["l"]),
            frozenset(data["s"]),
            language_counts(data.get("c", {})),
        )
        return audience, float(data["t"])


def connect_async(url: str, config: RedisHubConfig) -> aioredis.Redis:
    """An asyncio client without redis-py's own retries: the hub's backoff policy applies."""
    return aioredis.Redis.from_url(
        url,
        socket_connect_timeout=2.0,
        socket_timeout=config.block_ms / 1000 + 5.0,
        retry=Retry(NoBackoff(), 0),
    )


def entry_body(event: Event) -> str:
    """The event's wire JSON without its leading ``{`` and without ``seq``/``ts`` (the emit
    script prepends them)."""
    data = to_dict(event)
    del data["seq"], data["ts"]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))[1:]


def decode_entry(fields: Mapping[bytes, bytes]) -> Event:
    """The event of one stream entry."""
    event = from_dict(json.loads(fields[b"e"]))
    if isinstance(event, SpeechAudio):
        event = dataclasses.replace(event, pcm=fields.get(b"pcm", b""))
    return event


def _stream_items(reply: Any) -> Iterable[tuple[bytes, Sequence[tuple[bytes, Any]]]]:
    """XREAD's reply as (stream key, entries), for RESP2 (list) and RESP3 (dict)."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return [(k, v[0] if v and isinstance(v[0], list) else v) for k, v in reply.items()]
    return [(k, v) for k, v in reply]


class ChangeFeed:
    """What this node learnt of other nodes, waiting to be taken: audience changes fold
    into one per session; state changes, terms and corrections keep their order."""

    def __init__(self) -> None:
        self._audience: dict[str, None] = {}
        self._states: list[StateChanged | TermsFollowed | Corrected] = []
        self._ready = asyncio.Event()
        self._closed = False

    def audience(self, code: str) -> None:
        self._audience[code] = None
        self._ready.set()

    def state(self, code: str, state: SessionState) -> None:
        self._states.append(StateChanged(code, state))
        self._ready.set()

    def edit(self, change: TermsFollowed | Corrected) -> None:
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


class RedisHub(FanoutSubscribers):
    """:class:`engine.delivery.hub.Hub` shared by every node through one Redis (policies above).

    Local fan-out (queues, backfill from the session log, language switches) is a
    :class:`engine.delivery.fanout.Fanout`, as in the in-process hub; only :meth:`emit`,
    delivery and the audience go through Redis.
    """

    def __init__(
        self,
        url: str,
        *,
        max_queue: int = 1000,
        node: str | None = None,
        config: RedisHubConfig | None = None,
    ) -> None:
        self._audience_wake = asyncio.Event()
        self.fanout = Fanout(max_queue, on_change=self._audience_wake.set)
        self.config = config or RedisHubConfig()
        self.node = node or uuid.uuid4().hex[:12]
        self._redis = connect_async(url, self.config)
        self._emit_script = self._redis.register_script(_EMIT)
        self._cursors: dict[str, bytes] = {}
        self._audio_cursors: dict[str, bytes | None] = {}
        self._floors: dict[str, int] = {}
        self._opened_at: dict[str, float] = {}
        self._emitted: dict[tuple[str, bool], int] = {}
        self._delivered: dict[tuple[str, bool], int] = {}
        self._waiters: list[tuple[str, asyncio.Future[None]]] = []
        self._remote: dict[str, Audience] = {}
        self._shared: set[str] = set()
        """Sessions this node has an audience entry for in Redis."""
        self._to_clear: set[str] = set()
        self._streams_changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._error: str | None = "connecting to Redis"
        self._closing = False
        self._changes = ChangeFeed()
        """Other nodes' audience changes and state changes (:meth:`remote_changes`)."""

    # --- lifecycle and health ------------------------------------------------------------

    async def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._read_loop(), name="redis-hub-reader"),
            asyncio.create_task(self._audience_loop(), name="redis-hub-audience"),
        ]

    async def close(self) -> None:
        """Stop the reader and the audience task between two commands (cancelling a
        blocked ``XREAD`` can hang in redis-py), remove this node's audience entries."""
        self._closing = True
        self._changes.close()
        self._streams_changed.set()
        self._audience_wake.set()
        if self._tasks:
            _, stuck = await asyncio.wait(self._tasks, timeout=self.config.block_ms / 1000 + 3)
            for task in stuck:
                task.cancel()
        self._tasks = []
        with contextlib.suppress(*REDIS_ERRORS, TimeoutError):
            async with asyncio.timeout(1.0):
                for code in self._shared:
                    await self._redis.hdel(session_key(code, "aud"), self.node)
        await self._redis.aclose()

    def unavailable_reason(self) -> str | None:
        return self._error

    def _failed(self, exc: Exception) -> None:
        reason = f"Redis unavailable: {type(exc).__name__}: {exc}"
        if self._error is None:
            log.warning("%s; reconnecting with backoff", reason)
        self._error = reason

    def _succeeded(self) -> None:
        if self._error is not None:
            log.info("Redis reachable (node %s)", self.node)
        self._error = None

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
        self._remote.pop(code, None)
        if code in self._shared:
            self._to_clear.add(code)
            self._audience_wake.set()

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
                self._failed(exc)
                if time.monotonic() > deadline:
                    raise HubUnavailable(
                        f"Redis unreachable for {self.config.outage_s:.0f} s"
                    ) from exc
                await backoff.sleep()
        self._succeeded()
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
                self._failed(exc)
                await backoff.sleep()
                continue
            backoff.reset()
            self._succeeded()
            for key, entries in _stream_items(reply):
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
            self._audience_wake.set()  # its audience probably changed: look now
        elif isinstance(event, TermsChanged):
            self._changes.edit(TermsFollowed(code, event.terms))
        elif isinstance(event, Caption) and event.source and event.rev:
            self._changes.edit(Corrected(code, event))

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

    def local_audience(self, code: str) -> Audience:
        fanout = self.fanout
        return Audience(
            fanout.listener_count(code),
            fanout.wanted_languages(code),
            fanout.wanted_speech(code),
            language_counts(fanout.listeners_by_language(code)),
        )

    def listener_count(self, code: str) -> int:
        return self.fanout.listener_count(code) + self._remote.get(code, Audience()).count

    def listeners_by_language(self, code: str) -> Mapping[str, int]:
        counts = self.fanout.listeners_by_language(code)
        counts.update(dict(self._remote.get(code, Audience()).by_language))
        return counts

    def wanted_languages(self, code: str) -> frozenset[str]:
        return self.fanout.wanted_languages(code) | self._remote.get(code, Audience()).langs

    def wanted_speech(self, code: str) -> frozenset[str]:
        return self.fanout.wanted_speech(code) | self._remote.get(code, Audience()).speech

    def deepest_queue(self) -> int:
        return self.fanout.deepest_queue()

    @property
    def replaced_drafts(self) -> int:
        return self.fanout.replaced_drafts

    def remote_changes(self) -> AsyncIterator[RemoteChange]:
        return aiter(self._changes)

    async def _audience_loop(self) -> None:
        backoff = Backoff()
        while not self._closing:
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.config.heartbeat_s):
                    await self._audience_wake.wait()
            self._audience_wake.clear()
            if self._closing:
                return
            try:
                await self._sync_audience()
            except REDIS_ERRORS as exc:
                self._failed(exc)
                await backoff.sleep()
                self._audience_wake.set()  # retry at once after the backoff
                continue
            backoff.reset()
            self._succeeded()
            await asyncio.sleep(0.02)  # fold a join storm into few writes

    async def _sync_audience(self) -> None:
        """Write this node's audience of each open session, read every node's."""
        now = time.time()
        codes = self.fanout.codes()
        clearing = list(self._to_clear)
        pipe = self._redis.pipeline(transaction=False)
        pipe.ping()
        shared: set[str] = set()
        ttl_ms = int(self.config.stale_s * 4000)
        for code in clearing:
            pipe.hdel(session_key(code, "aud"), self.node)
        for code in codes:
            key = session_key(code, "aud")
            if self.fanout.has_subscribers(code):
                pipe.hset(key, self.node, self.local_audience(code).to_json(now))
                pipe.pexpire(key, ttl_ms)
                shared.add(code)
            elif code in self._shared:
                pipe.hdel(key, self.node)
            pipe.hgetall(key)
        replies = await pipe.execute()
        self._to_clear.difference_update(clearing)
        self._shared = shared
        tables = [r for r in replies if isinstance(r, dict)]
        changed = []
        for code, table in zip(codes, tables, strict=True):
            remote = Audience()
            for node, value in table.items():
                if node.decode() == self.node:
                    continue
                audience, at = Audience.from_json(value)
                if now - at <= self.config.stale_s:
                    remote = remote | audience
            if code in self.fanout and remote != self._remote.get(code, Audience()):
                self._remote[code] = remote
                changed.append(code)
        for code in changed:
            self._changes.audience(code)
