"""The audience of a session across the nodes of the Redis hub.

Each node writes its **audience** of each session it serves (listener count, languages read,
languages heard with audio on, and how many follow each language) into the session's
``...:aud`` hash, under its node id (layout in :mod:`engine.delivery.redis_keys`). It rewrites
its entries every ``heartbeat_s``, and at once when a local subscriber joins, leaves or
changes what it receives, or when another node changed the session's state; entries older
than ``stale_s`` (a node that died) are ignored, and the hash expires when no node has
rewritten it for four times that. ``listener_count``, ``listeners_by_language``,
``wanted_languages`` and ``wanted_speech`` are the union over live nodes, so the presenter's
node translates and speaks exactly what listeners anywhere asked for; a change of the other
nodes' audience of a session is reported (it reaches
:meth:`engine.delivery.redis.RedisHub.remote_changes`).

Redis unavailable: the audience task retries with the hub's backoff and tries again at once
after each wait; meanwhile the other nodes' last known audience stands.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import redis.asyncio as aioredis

from engine.delivery.fanout import Fanout
from engine.delivery.redis_connection import REDIS_ERRORS, Reachability
from engine.delivery.redis_keys import Backoff, session_key
from engine.events import LanguageCounts, language_counts


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


NOBODY = Audience()
"""No listeners at all."""


class SharedAudience:
    """This node's audience of each session it serves, published, and the other nodes',
    read (policies above).

    ``fanout`` is the hub's local half (what this node's subscribers want); ``wake`` is set
    when that may have changed (the fan-out's ``on_change``, or :meth:`look_now`);
    ``on_remote_change`` is called with a session's code when the other nodes' audience of
    it changed; ``reachability`` hears of every Redis failure and success.
    """

    def __init__(
        self,
        client: aioredis.Redis,
        fanout: Fanout,
        wake: asyncio.Event,
        *,
        node: str,
        reachability: Reachability,
        on_remote_change: Callable[[str], None],
        heartbeat_s: float,
        stale_s: float,
    ) -> None:
        self._redis = client
        self._fanout = fanout
        self._wake = wake
        self.node = node
        self._reachability = reachability
        self._on_remote_change = on_remote_change
        self.heartbeat_s = heartbeat_s
        self.stale_s = stale_s
        self._remote: dict[str, Audience] = {}
        self._shared: set[str] = set()
        """Sessions this node has an audience entry for in Redis."""
        self._to_clear: set[str] = set()
        self._closing = False

    # --- what listeners want, over every node -----------------------------------------------

    def local(self, code: str) -> Audience:
        """This node's audience of ``code``."""
        fanout = self._fanout
        return Audience(
            fanout.listener_count(code),
            fanout.wanted_languages(code),
            fanout.wanted_speech(code),
            language_counts(fanout.listeners_by_language(code)),
        )

    def _others(self, code: str) -> Audience:
        """The other nodes' audience of ``code`` (nobody until one is read)."""
        return self._remote.get(code, NOBODY)

    def listener_count(self, code: str) -> int:
        return self._fanout.listener_count(code) + self._others(code).count

    def listeners_by_language(self, code: str) -> Mapping[str, int]:
        counts = self._fanout.listeners_by_language(code)
        counts.update(dict(self._others(code).by_language))
        return counts

    def wanted_languages(self, code: str) -> frozenset[str]:
        return self._fanout.wanted_languages(code) | self._others(code).langs

    def wanted_speech(self, code: str) -> frozenset[str]:
        return self._fanout.wanted_speech(code) | self._others(code).speech

    # --- sessions and lifecycle -------------------------------------------------------------

    def look_now(self) -> None:
        """Publish and read at once rather than at the next heartbeat."""
        self._wake.set()

    def forget(self, code: str) -> None:
        """The session left this node: drop the others' audience of it and remove this
        node's entry at the next write."""
        self._remote.pop(code, None)
        if code in self._shared:
            self._to_clear.add(code)
            self._wake.set()

    def stop(self) -> None:
        """Make :meth:`run` return at its next wake (now)."""
        self._closing = True
        self._wake.set()

    async def withdraw(self) -> None:
        """Remove this node's entries (after :meth:`run` returned), giving up after 1 s."""
        with contextlib.suppress(*REDIS_ERRORS, TimeoutError):
            async with asyncio.timeout(1.0):
                for code in self._shared:
                    await self._redis.hdel(session_key(code, "aud"), self.node)

    # --- the audience task ------------------------------------------------------------------

    async def run(self) -> None:
        """Publish and read every ``heartbeat_s`` and at each wake, until :meth:`stop`."""
        backoff = Backoff()
        while not self._closing:
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.heartbeat_s):
                    await self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            try:
                await self._sync()
            except REDIS_ERRORS as exc:
                self._reachability.failed(exc)
                await backoff.sleep()
                self._wake.set()  # retry at once after the backoff
                continue
            backoff.reset()
            self._reachability.succeeded()
            await asyncio.sleep(0.02)  # fold a join storm into few writes

    async def _sync(self) -> None:
        """Write this node's audience of each open session, read every node's."""
        now = time.time()
        codes = self._fanout.codes()
        clearing = list(self._to_clear)
        pipe = self._redis.pipeline(transaction=False)
        pipe.ping()
        shared: set[str] = set()
        ttl_ms = int(self.stale_s * 4000)
        for code in clearing:
            pipe.hdel(session_key(code, "aud"), self.node)
        for code in codes:
            key = session_key(code, "aud")
            if self._fanout.has_subscribers(code):
                pipe.hset(key, self.node, self.local(code).to_json(now))
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
            remote = NOBODY
            for node, value in table.items():
                if node.decode() == self.node:
                    continue
                audience, at = Audience.from_json(value)
                if now - at <= self.stale_s:
                    remote = remote | audience
            if code in self._fanout and remote != self._others(code):
                self._remote[code] = remote
                changed.append(code)
        for code in changed:
            self._on_remote_change(code)
