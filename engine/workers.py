"""The one place where work crosses from the event loop into threads.

Every call into a model (faster-whisper, Silero, Apertium, piper) or into blocking storage
goes through a :class:`WorkerPool`: one small executor per resource, so a slow model never
starves another, and a bound on how many calls may wait for it.

Overflow policy: :meth:`WorkerPool.run` raises :class:`Saturated` at once when ``max_pending``
calls are already queued or running; the caller decides (a session skips a draft step, a new
stream is refused with 1013). Nothing queues without bound.

Order: calls start in the order they came, except that :meth:`WorkerPool.run_first` goes ahead
of every call still waiting for a thread (never of one already running). Recognition so
starts a final's decode before the drafts queued before it: everything after a final (the
sentence, its translation, its speech) waits for it (docs/metrics.md, "Panels / Finals
first").

Load: :meth:`WorkerPool.load` is how many calls a thread of the pool had in flight (running
or waiting for it), on average over the last ``load_window_s`` seconds (an exponential
average, so it needs no history). Near 1 and above, calls wait for threads as a rule, not by
chance. ``/metrics`` reports it per pool (``interp_worker_load``); docs/metrics.md,
"Capacity / The pool's load, and shedding by it (tried, not kept)", measured what one, two
and three presenters put on the ``asr`` pool.

Tenants: a caller that will call a pool for as long as it runs (a presenter's stream on the
``asr`` pool) holds a :meth:`WorkerPool.tenancy` meanwhile. With more tenants than threads
the pool is :meth:`WorkerPool.crowded`: its tenants' calls will wait for each other as a
rule, which a recogniser answers by shedding its dearest step before it falls behind
(engine/recognition/shedding.py).

Priority between pools: a pool made ``below`` the rest (:class:`Below`) with ``nice`` > 0
lowers its threads' scheduling priority (Linux keeps a nice value per thread, so only that
pool's threads, and any thread they start, such as onnxruntime's, run below the rest of the
process). ``idle`` goes further: on Linux its threads take the ``SCHED_IDLE`` policy, so they
run only on a core that no thread of normal priority wants, and any such thread that wakes
takes the core from them at once (a nice thread still slowed a decode by a tenth to a
quarter; an idle one not measurably). Speech synthesis runs so, below recognition
(docs/metrics.md, "Natural voices / Synthesis on idle cores").
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import heapq
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from enum import IntEnum
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class Saturated(RuntimeError):
    """A worker pool already has as many calls waiting as it allows."""


class Priority(IntEnum):
    """Which waiting call of a pool starts first when a thread frees (lower first; in the
    order they came within one level)."""

    FIRST = 0
    NORMAL = 1
    LAST = 2


@dataclass(frozen=True, slots=True)
class Below:
    """How far below the rest of the process a pool's threads run (module docstring,
    "Priority between pools"): ``nice`` added to their nice value, and, when ``idle``, the
    ``SCHED_IDLE`` policy on Linux."""

    nice: int = 0
    idle: bool = False

    @property
    def lowered(self) -> bool:
        return self.nice > 0 or self.idle


class WorkerPool:
    """A bounded executor for one resource (one model or one database)."""

    def __init__(
        self,
        name: str,
        *,
        threads: int = 1,
        max_pending: int = 64,
        below: Below = Below(),
        on_call: Callable[[str, float], None] | None = None,
        load_window_s: float = 5.0,
    ) -> None:
        self.name = name
        self._on_call = on_call
        self.max_pending = max_pending
        self._executor = ThreadPoolExecutor(
            max_workers=threads,
            thread_name_prefix=name,
            initializer=functools.partial(_lower_priority, below) if below.lowered else None,
        )
        self._threads = threads
        self._pending = 0
        self._running = 0
        """Calls handed to the executor and not yet returned from their thread."""
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        """Calls waiting for a thread: a heap of (priority, arrival, their turn)."""
        self._arrivals = itertools.count()
        self._load_window_s = load_window_s
        self._in_flight = 0.0
        """Calls in flight, averaged exponentially over ``load_window_s`` up to ``_since``."""
        self._since = time.monotonic()
        self._tenants = 0
        self.busy_seconds = 0.0
        self.calls = 0

    @property
    def pending(self) -> int:
        return self._pending

    @property
    def tenants(self) -> int:
        return self._tenants

    @contextlib.contextmanager
    def tenancy(self) -> Iterator[None]:
        """Count the caller as a tenant of the pool while the block runs (module
        docstring, "Tenants")."""
        self._tenants += 1
        try:
            yield
        finally:
            self._tenants -= 1

    def crowded(self) -> bool:
        """Whether the pool has more tenants than threads."""
        return self._tenants > self._threads

    def load(self) -> float:
        """Calls in flight per thread, on average over the last ``load_window_s`` seconds
        (module docstring, "Load")."""
        self._average()
        return self._in_flight / self._threads

    def _average(self) -> None:
        """Bring the average up to now, the count of calls in flight having been
        ``_pending`` since ``_since``: call it before ``_pending`` changes."""
        now = time.monotonic()
        kept = math.exp(-(now - self._since) / self._load_window_s)
        self._in_flight = self._pending + (self._in_flight - self._pending) * kept
        self._since = now

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` in a thread of this pool once the calls before it have started."""
        return await self._call(Priority.NORMAL, functools.partial(fn, *args, **kwargs))

    async def run_first(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` ahead of every :meth:`run` call still waiting for a thread."""
        return await self._call(Priority.FIRST, functools.partial(fn, *args, **kwargs))

    async def run_last(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` behind every :meth:`run` and :meth:`run_first` call waiting for a
        thread: work that may be late without anyone missing it."""
        return await self._call(Priority.LAST, functools.partial(fn, *args, **kwargs))

    async def _call(self, priority: Priority, fn: Callable[[], T]) -> T:
        if self._pending >= self.max_pending:
            raise Saturated(f"{self.name}: {self._pending} calls already waiting")
        self._average()
        self._pending += 1
        try:
            await self._turn(priority)
            loop = asyncio.get_running_loop()
            call = functools.partial(contextvars.copy_context().run, fn)
            running = self._executor.submit(self._timed, call)
            # The thread is free again when the call returns there, not when its caller
            # stops waiting (a cancelled caller leaves the call running).
            running.add_done_callback(lambda _: self._freed(loop))
            return await asyncio.wrap_future(running)
        finally:
            self._average()
            self._pending -= 1

    async def _turn(self, priority: Priority) -> None:
        """Wait until a thread is free for this call and it is the first in line."""
        if self._running < self._threads and not self._waiting:
            self._running += 1
            return
        place = (priority, next(self._arrivals), asyncio.get_running_loop().create_future())
        heapq.heappush(self._waiting, place)
        try:
            await place[2]
        except asyncio.CancelledError:
            if place[2].cancelled():  # still in line: leave it
                self._waiting.remove(place)
                heapq.heapify(self._waiting)
            else:  # given a thread it will not use: pass it on
                self._release()
            raise

    def _freed(self, loop: asyncio.AbstractEventLoop) -> None:
        """Called in the thread a call ran in, once it returned."""
        try:
            loop.call_soon_threadsafe(self._release)
        except RuntimeError:  # the loop has closed: nobody waits any more
            pass

    def _release(self) -> None:
        """A thread is free: hand it to the first call in line, if any."""
        if self._waiting:
            heapq.heappop(self._waiting)[2].set_result(None)
        else:
            self._running -= 1

    def start(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Queue ``fn`` in this pool without waiting for it: start-up work nobody waits on,
        such as warming a model (it runs before any call queued after it, whatever its
        priority, and outside the count of running calls)."""
        call = functools.partial(fn, *args, **kwargs)
        return self._executor.submit(self._timed, call)

    def _timed(self, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            return call()
        finally:
            seconds = time.perf_counter() - started
            self.busy_seconds += seconds
            self.calls += 1
            if self._on_call is not None:
                self._on_call(self.name, seconds)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def _lower_priority(below: Below) -> None:
    """Run in each new thread of a pool: raise this thread's nice value by ``below.nice`` (on
    Linux ``nice(2)`` acts on the calling thread only) and, when ``below.idle``, give it the
    ``SCHED_IDLE`` policy (Linux only; elsewhere the nice value is all there is). Threads it
    starts later inherit both."""
    if below.nice > 0:
        os.nice(below.nice)
    if below.idle and sys.platform == "linux":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


class Workers:
    """The named pools of one process, created by the app's lifespan."""

    def __init__(self, on_call: Callable[[str, float], None] | None = None) -> None:
        self._pools: dict[str, WorkerPool] = {}
        self._on_call = on_call

    def pool(
        self, name: str, *, threads: int = 1, max_pending: int = 64, below: Below = Below()
    ) -> WorkerPool:
        if name not in self._pools:
            self._pools[name] = WorkerPool(
                name, threads=threads, max_pending=max_pending, below=below, on_call=self._on_call
            )
        return self._pools[name]

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._pools.values())

    def shutdown(self) -> None:
        for pool in self._pools.values():
            pool.shutdown()
