"""Listener client processes: many :class:`~bench.listener.Listener` s spread over processes.

One asyncio loop cannot read a thousand sockets without itself becoming what the numbers
measure, so the listeners of a round are dealt to client processes (``spawn``: fresh
interpreters), each with one loop, that the bench steers over a pipe:

1. each process connects its listeners and answers :class:`Joined`;
2. the bench sends :class:`Expect` (the audience size); each answers :class:`Settled` once
   every listener has seen that count (the join storm is over);
3. the bench sends :class:`Finish` (the segments of the presenter's finals); each waits
   until its listeners hold them, closes every socket and answers :class:`Results`.

A process that fails answers :class:`ClientFailed`, which the bench raises as
:class:`ClientError`.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import TypeVar

from bench.deliveries import ListenerRecord
from bench.listener import ClientSpec, Listener
from bench.resources import raise_fd_limit

LISTENERS_PER_CLIENT_PROCESS = 250
MAX_CLIENT_PROCESSES = 4


class ClientError(RuntimeError):
    """A client process failed, or did not answer in time."""


@dataclass(frozen=True, slots=True)
class Joined:
    """Client -> bench: every listener of this process has connected or failed to."""

    connected: int
    failures: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Expect:
    """Bench -> client: wait until every listener has seen an audience of ``listeners``."""

    listeners: int
    timeout: float


@dataclass(frozen=True, slots=True)
class Settled:
    """Client -> bench: the audience count reached the expected size (or the wait timed
    out: ``complete`` is false)."""

    complete: bool


@dataclass(frozen=True, slots=True)
class Finish:
    """Bench -> client: wait until every listener holds a final of each of ``segments``
    (at most ``timeout`` seconds), then close every socket."""

    segments: frozenset[int]
    timeout: float


@dataclass(frozen=True, slots=True)
class Results:
    """Client -> bench: what each listener received, and how long closing took."""

    records: tuple[ListenerRecord, ...]
    close_s: float


@dataclass(frozen=True, slots=True)
class ClientFailed:
    """Client -> bench: the client process failed."""

    error: str


async def _all_set(events: Iterable[asyncio.Event], limit_s: float) -> bool:
    """Wait until every event is set; ``False`` if ``limit_s`` seconds passed first."""
    try:
        async with asyncio.timeout(limit_s):
            for event in events:
                await event.wait()
    except TimeoutError:
        return False
    return True


async def _client_main(conn: Connection, spec: ClientSpec) -> None:
    listeners = [Listener(i, spec) for i in spec.indices]
    gate = asyncio.Semaphore(spec.connect_concurrency)
    followers = [asyncio.create_task(listener.follow(gate)) for listener in listeners]
    for listener in listeners:
        await listener.joined.wait()
    failures = tuple(f"{lst.index}: {lst.error}" for lst in listeners if lst.error)
    conn.send(Joined(len(listeners) - len(failures), failures))

    expect = await asyncio.to_thread(conn.recv)
    if not isinstance(expect, Expect):
        raise ClientError(f"expected Expect from the bench, got {expect!r}")
    connected = [lst for lst in listeners if lst.error is None]
    for listener in connected:
        listener.expect_audience(expect.listeners)
    complete = await _all_set((lst.settled for lst in connected), expect.timeout)
    conn.send(Settled(complete))

    finish = await asyncio.to_thread(conn.recv)
    if not isinstance(finish, Finish):
        raise ClientError(f"expected Finish from the bench, got {finish!r}")
    for listener in connected:
        listener.expect_finals(finish.segments)
    await _all_set((lst.complete for lst in connected), finish.timeout)
    started = time.monotonic()
    await asyncio.gather(*(listener.stop() for listener in listeners))
    await asyncio.gather(*followers)
    close_s = time.monotonic() - started
    conn.send(Results(tuple(listener.record() for listener in listeners), close_s))


def client_process(conn: Connection, spec: ClientSpec) -> None:
    """Entry point of one client process: run its listeners, report over ``conn``."""
    raise_fd_limit(len(spec.indices) + 256)
    if spec.nice:
        os.nice(spec.nice)
    try:
        asyncio.run(_client_main(conn, spec))
    except Exception:
        # The process boundary: the bench raises it as a ClientError.
        conn.send(ClientFailed(traceback.format_exc()))
        raise
    finally:
        conn.close()


M = TypeVar("M", Joined, Settled, Results)


class ClientPool:
    """Client processes (``spawn``: a fresh interpreter, no state copied from this one),
    one pipe to each."""

    def __init__(self, specs: Sequence[ClientSpec]) -> None:
        context = multiprocessing.get_context("spawn")
        self._processes: list[BaseProcess] = []
        self._pipes: list[Connection] = []
        for spec in specs:
            mine, theirs = context.Pipe()
            process = context.Process(target=client_process, args=(theirs, spec), daemon=True)
            process.start()
            theirs.close()
            self._processes.append(process)
            self._pipes.append(mine)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._processes if p.pid is not None]

    def send(self, message: Expect | Finish) -> None:
        self.send_each([message] * len(self._pipes))

    def send_each(self, messages: Sequence[Expect | Finish]) -> None:
        """One message to each client process, in the order of the specs."""
        for pipe, message in zip(self._pipes, messages, strict=True):
            pipe.send(message)

    async def gather(self, kind: type[M], limit_s: float) -> list[M]:
        """One message of type ``kind`` from every client process."""

        async def receive(pipe: Connection) -> M:
            try:
                message = await asyncio.to_thread(pipe.recv)
            except EOFError:
                raise ClientError("a client process exited without reporting") from None
            if isinstance(message, ClientFailed):
                raise ClientError(f"a client process failed:\n{message.error}")
            if not isinstance(message, kind):
                raise ClientError(f"expected {kind.__name__} from a client, got {message!r}")
            return message

        try:
            async with asyncio.timeout(limit_s):
                return list(await asyncio.gather(*(receive(p) for p in self._pipes)))
        except TimeoutError:
            raise ClientError(f"client processes did not report {kind.__name__} in time") from None

    async def join(self, limit_s: float) -> tuple[int, bool]:
        """Steps 1 and 2: wait until every listener has connected or failed to, then until
        each has seen the audience reach the number that connected. Returns that number and
        whether every process saw it within ``limit_s`` (the wait itself is bounded by
        ``limit_s`` for each step, plus 30 s for the processes to answer)."""
        joined = await self.gather(Joined, limit_s)
        connected = sum(j.connected for j in joined)
        self.send(Expect(connected, limit_s))
        settled = await self.gather(Settled, limit_s + 30)
        return connected, all(s.complete for s in settled)

    async def finish(
        self, segments: frozenset[int], limit_s: float
    ) -> tuple[list[ListenerRecord], float]:
        """Step 3: every listener waits (at most ``limit_s`` seconds) for a final of each of
        ``segments``, then closes. Returns every listener's record, by index, and the longest
        time a process took to close its sockets."""
        self.send(Finish(segments, limit_s))
        results = await self.gather(Results, limit_s + 120)
        records = sorted((r for res in results for r in res.records), key=lambda r: r.index)
        return records, max((res.close_s for res in results), default=0.0)

    async def __aenter__(self) -> ClientPool:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Close the processes: at once after an error, else with the usual grace."""
        await self.close(grace=0.0 if exc_type is not None else 10.0)

    async def close(self, grace: float = 10.0) -> None:
        """Wait up to ``grace`` seconds for the processes to exit, then terminate the rest.
        Terminating also ends any thread still blocked reading a pipe (EOF)."""
        deadline = time.monotonic() + grace
        for process in self._processes:
            await asyncio.to_thread(process.join, max(0.0, deadline - time.monotonic()))
        for process in self._processes:
            if process.is_alive():
                process.terminate()
                await asyncio.to_thread(process.join)
        for pipe in self._pipes:
            pipe.close()


def split_listeners(count: int, processes: int) -> list[tuple[int, ...]]:
    """Listener indices ``0..count-1`` dealt round-robin to ``processes`` client processes
    (none left empty)."""
    processes = max(1, min(processes, count))
    return [tuple(range(k, count, processes)) for k in range(processes)]


def default_client_processes(listeners: int) -> int:
    """One client process per ``LISTENERS_PER_CLIENT_PROCESS`` listeners, at most
    ``MAX_CLIENT_PROCESSES``."""
    return max(1, min(MAX_CLIENT_PROCESSES, math.ceil(listeners / LISTENERS_PER_CLIENT_PROCESS)))
