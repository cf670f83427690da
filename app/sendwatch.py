"""Stalled-send detection for every listener socket of the process, by one task.

A send to a listener blocks only when its connection's write buffer is full (the client
stopped reading). Each sender notes when its send began and when it ended; one watcher task
wakes every ``interval`` seconds while sends are in flight and cancels the senders whose
send has taken longer than ``timeout``; the sender then closes its socket with a reason.

This replaced ``asyncio.timeout`` around every send, a timer armed and cancelled per listener
per event: with it one listener's send took 36-42 microseconds of the event loop's thread,
without it 32-33 (two runs each, numbers in docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

Task = asyncio.Task[Any]


class SendWatch:
    """Cancels the sender tasks whose current send has lasted longer than ``timeout``."""

    def __init__(self, timeout: float, interval: float | None = None) -> None:
        self.timeout = timeout
        self.interval = interval if interval is not None else min(1.0, max(0.05, timeout / 4))
        self.stalls = 0
        self._began: dict[Task, float] = {}
        self._stalled: set[Task] = set()
        self._watcher: asyncio.Task[None] | None = None

    @property
    def in_flight(self) -> int:
        return len(self._began)

    def begin(self, task: Task) -> None:
        """``task`` starts a send now."""
        self._began[task] = time.monotonic()
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    def end(self, task: Task) -> None:
        """``task``'s send is over (done, failed or cancelled)."""
        self._began.pop(task, None)

    def stalled(self, task: Task) -> bool:
        """Whether this watch cancelled ``task`` for a stalled send (asked once, by the task
        as it handles the cancellation)."""
        if task in self._stalled:
            self._stalled.discard(task)
            return True
        return False

    async def close(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self) -> None:
        try:
            while self._began:
                await asyncio.sleep(self.interval)
                deadline = time.monotonic() - self.timeout
                for task, began in list(self._began.items()):
                    if began <= deadline and task not in self._stalled:
                        self._stalled.add(task)
                        self.stalls += 1
                        task.cancel()
        finally:
            if self._watcher is asyncio.current_task():
                self._watcher = None
