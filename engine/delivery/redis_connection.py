"""The Redis hub's connection: how it is opened, which errors mean Redis is unreachable, and
whether this node reaches it now.

The client has no retries of its own: every task of the hub that talks to Redis (the reader,
the audience task, :meth:`engine.delivery.redis.RedisHub.emit`) retries with the hub's
backoff (:class:`engine.delivery.redis_keys.Backoff`) and reports each failure and success to
one :class:`Reachability`, which answers ``/readyz`` meanwhile.
"""

from __future__ import annotations

import logging

import redis
import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.retry import Retry

log = logging.getLogger(__name__)

REDIS_ERRORS = (redis.ConnectionError, redis.TimeoutError)
"""Errors that mean Redis is unreachable or restarting (including ``LOADING``)."""


def connect_async(url: str, *, block_ms: int) -> aioredis.Redis:
    """An asyncio client without redis-py's own retries: the hub's backoff policy applies.
    ``block_ms`` is the longest blocking read the client will make (its socket waits longer)."""
    return aioredis.Redis.from_url(
        url,
        socket_connect_timeout=2.0,
        socket_timeout=block_ms / 1000 + 5.0,
        retry=Retry(NoBackoff(), 0),
    )


class Reachability:
    """Whether node ``node`` reaches Redis now: unreachable until the first success, and
    again from any failure to the next success (logged once each way)."""

    def __init__(self, node: str) -> None:
        self.node = node
        self._error: str | None = "connecting to Redis"

    def unavailable_reason(self) -> str | None:
        """Why Redis is unreachable now; ``None`` if it is reachable."""
        return self._error

    def failed(self, exc: Exception) -> None:
        reason = f"Redis unavailable: {type(exc).__name__}: {exc}"
        if self._error is None:
            log.warning("%s; reconnecting with backoff", reason)
        self._error = reason

    def succeeded(self) -> None:
        if self._error is not None:
            log.info("Redis reachable (node %s)", self.node)
        self._error = None
