"""Captions pushed out: a session's finals in one language, posted to YouTube Live or Zoom.

Each target (:class:`CaptionPush`) follows the session like a listener that is not counted
in the audience: a hub subscription to its language (so the language is translated even if
nobody in the room reads it). Two tasks per target:

- the *reader* takes events from the subscription as they are published and keeps the
  finals of the target's language in a bounded queue (:attr:`PushPolicy.max_pending`).
  Overflow policy: the oldest waiting caption is dropped and counted (a caption minutes late
  is no use to a live stream). The reader never waits for the network, so the hub's
  fan-out to everyone else never waits for a push endpoint;
- the *sender* posts one caption at a time, in order, in the service's format
  (:mod:`engine.delivery.push_formats`), each request with a timeout. A failure (a network
  error, a timeout, any status but 2xx) is retried with the same ``seq`` after a backoff
  that doubles up to :attr:`PushPolicy.max_backoff_s`, at most :attr:`PushPolicy.attempts`
  times; then the caption is given up (counted, the error kept) and the next one gets the
  next ``seq``.

:class:`SessionPushes` holds a session's targets (one per service) and closes them with the
session. The network is a port (:class:`Poster`); app/push_http.py is the HTTP one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from engine.delivery.hub import ListenerTooSlow, Subscription, SubscriptionClosed
from engine.delivery.push_formats import PushRequest, Service, request_for
from engine.events import Caption


class PostFailed(Exception):
    """A POST did not get an answer (network error or timeout)."""


class Poster(Protocol):
    """Sends one HTTP POST and returns its status code; raises :class:`PostFailed` when no
    answer came (the caller bounds the wait: it cancels a post past its timeout)."""

    async def post(self, request: PushRequest) -> int: ...


@dataclass(frozen=True, slots=True)
class PushTarget:
    """Where a session's captions go: the service, the URL it gave, the caption language."""

    service: Service
    url: str
    lang: str

    @property
    def host(self) -> str:
        """The URL's host: what the console shows (the URL itself is a secret)."""
        return urlsplit(self.url).hostname or ""


@dataclass(frozen=True, slots=True)
class PushPolicy:
    """Queue bound, timeout and retries of one target (rules in the module docstring)."""

    max_pending: int = 50
    timeout_s: float = 10.0
    attempts: int = 4
    first_backoff_s: float = 0.5
    max_backoff_s: float = 8.0


@dataclass(slots=True)
class PushStatus:
    """What the console shows of a target."""

    service: Service
    lang: str
    host: str
    sent: int = 0
    """Captions the service accepted."""
    pending: int = 0
    dropped: int = 0
    """Captions dropped unsent because the queue was full."""
    failed: int = 0
    """Captions given up after every attempt."""
    last_sent_at: float | None = None
    last_sent_text: str | None = None
    last_error: str | None = None
    last_error_at: float | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "service": self.service,
            "lang": self.lang,
            "host": self.host,
            "sent": self.sent,
            "pending": self.pending,
            "dropped": self.dropped,
            "failed": self.failed,
            "last_sent_at": self.last_sent_at,
            "last_sent_text": self.last_sent_text,
            "last_error": self.last_error,
            "last_error_at": self.last_error_at,
        }


Subscribe = Callable[[frozenset[str], int], Subscription]
"""Subscribes to the session in some languages from a ``since`` (not counted as audience)."""
Unsubscribe = Callable[[Subscription], None]


class CaptionPush:
    """One target of one session (policies in the module docstring)."""

    def __init__(
        self,
        target: PushTarget,
        subscribe: Subscribe,
        unsubscribe: Unsubscribe,
        poster: Poster,
        policy: PushPolicy,
        since: int,
    ) -> None:
        self.target = target
        self.policy = policy
        self.status = PushStatus(target.service, target.lang, target.host)
        self._subscribe = subscribe
        self._unsubscribe = unsubscribe
        self._poster = poster
        self._subscription = subscribe(frozenset({target.lang}), since)
        self._pending: deque[Caption] = deque()
        self._ready = asyncio.Event()
        self._seq = 0
        self._tasks = [
            asyncio.create_task(self._read(), name=f"push-read-{target.service}"),
            asyncio.create_task(self._send(), name=f"push-send-{target.service}"),
        ]

    async def close(self) -> None:
        """Stop both tasks and leave the session (captions still waiting are not sent)."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._unsubscribe(self._subscription)

    def snapshot(self) -> PushStatus:
        self.status.pending = len(self._pending)
        return self.status

    async def _read(self) -> None:
        while True:
            try:
                event = await self._subscription.get()
            except ListenerTooSlow:  # the loop starved: resume after what was taken
                since = self._subscription.last_seq
                self._unsubscribe(self._subscription)
                self._subscription = self._subscribe(frozenset({self.target.lang}), since)
                continue
            except SubscriptionClosed:
                return
            if (
                isinstance(event, Caption)
                and event.is_final
                and event.lang == self.target.lang
                and event.text.strip()
            ):
                self._queue(event)

    def _queue(self, caption: Caption) -> None:
        if len(self._pending) >= self.policy.max_pending:
            self._pending.popleft()
            self.status.dropped += 1
        self._pending.append(caption)
        self._ready.set()

    async def _send(self) -> None:
        while True:
            while not self._pending:
                self._ready.clear()
                await self._ready.wait()
            caption = self._pending.popleft()
            self._seq += 1  # one per new caption; retries keep it
            await self._post(caption, self._seq)

    async def _post(self, caption: Caption, seq: int) -> None:
        target = self.target
        request = request_for(
            target.service, target.url, caption.text, target.lang, caption.ts or time.time(), seq
        )
        delay = self.policy.first_backoff_s
        for attempt in range(1, self.policy.attempts + 1):
            try:
                async with asyncio.timeout(self.policy.timeout_s):
                    status = await self._poster.post(request)
            except TimeoutError:
                self._failed(f"no answer within {self.policy.timeout_s:g} s")
            except PostFailed as exc:
                self._failed(str(exc) or type(exc).__name__)
            else:
                if 200 <= status < 300:
                    self.status.sent += 1
                    self.status.last_sent_at = time.time()
                    self.status.last_sent_text = caption.text
                    return
                self._failed(f"HTTP {status}")
            if attempt < self.policy.attempts:
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.policy.max_backoff_s)
        self.status.failed += 1

    def _failed(self, message: str) -> None:
        self.status.last_error = message
        self.status.last_error_at = time.time()


class SessionPushes:
    """A session's push targets, one per service; closed with the session."""

    def __init__(
        self,
        subscribe: Subscribe,
        unsubscribe: Unsubscribe,
        last_seq: Callable[[], int],
        poster: Poster,
        policy: PushPolicy | None = None,
    ) -> None:
        self._subscribe = subscribe
        self._unsubscribe = unsubscribe
        self._last_seq = last_seq
        self._poster = poster
        self.policy = policy or PushPolicy()
        self._targets: dict[Service, CaptionPush] = {}

    async def set(self, target: PushTarget) -> PushStatus:
        """Push finals from now on to ``target`` (replacing the service's earlier one)."""
        await self.remove(target.service)
        push = CaptionPush(
            target, self._subscribe, self._unsubscribe, self._poster, self.policy, self._last_seq()
        )
        self._targets[target.service] = push
        return push.snapshot()

    async def remove(self, service: Service) -> bool:
        push = self._targets.pop(service, None)
        if push is None:
            return False
        await push.close()
        return True

    def statuses(self) -> list[PushStatus]:
        return [push.snapshot() for push in self._targets.values()]

    async def close(self) -> None:
        for service in list(self._targets):
            await self.remove(service)
