"""A sliding-window rate limit per client key (the session-creation limit of the API, and the
wrong passcodes a client may try)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

MAX_KEYS = 10_000
"""Most clients remembered at once; the oldest idle ones are forgotten first."""


@dataclass(slots=True)
class SlidingWindowLimit:
    """At most ``limit`` events per ``window`` seconds for each key (e.g. client address).

    An event may say ``what`` it is: one like an event already in the window counts once
    (a wrong passcode typed again, by the same person or by another behind the same address,
    tries nothing new). ``limit <= 0`` disables the check. Memory is bounded by
    :data:`MAX_KEYS` keys of at most ``limit`` events each.
    """

    limit: int
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    _hits: dict[str, deque[tuple[float, Hashable]]] = field(default_factory=dict)

    def wait(self, key: str) -> float | None:
        """Seconds until ``key`` may act again (None: now), without recording anything."""
        if self.limit <= 0:
            return None
        hits = self._hits.get(key)
        if hits is None:
            return None
        now = self.clock()
        recent = [at for at, _ in hits if at > now - self.window]
        if len(recent) < self.limit:
            return None
        return max(0.0, recent[-self.limit] + self.window - now)

    def allow(self, key: str, what: Hashable = None) -> float | None:
        """Record one event for ``key`` (``what`` it is, if it can repeat); None if allowed,
        else seconds until one is."""
        if self.limit <= 0:
            return None
        now = self.clock()
        hits = self._hits.pop(key, None) or deque()
        while hits and hits[0][0] <= now - self.window:
            hits.popleft()
        self._hits[key] = hits  # re-inserted: dict order is least recently used first
        if len(hits) >= self.limit:
            return max(0.0, hits[0][0] + self.window - now)
        if what is None or all(seen != what for _, seen in hits):
            hits.append((now, what))
        while len(self._hits) > MAX_KEYS:
            del self._hits[next(iter(self._hits))]
        return None
