"""The fan-out benchmark: one presenter, N listeners, how late each event reaches them.

One presenter replays a real recording in real time through ``/ws/present/{code}`` while N
listeners follow ``/ws/listen/{code}`` over loopback. The listeners are spread over several
client processes (one asyncio loop each) so that the client side is not what limits the
numbers; the report gives their CPU so a reader can judge. Definitions: docs/metrics.md.

One round (one N): start a fresh server, create the session, connect the N listeners and
wait until each has seen the audience count reach N (the join storm is over), replay the
recording, then wait until every listener holds every final the presenter got, and close.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import json
import math
import multiprocessing
import os
import resource
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

import psutil
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench.metrics import distribution, percentile
from bench.recordings import Recording
from bench.replay import (
    Replay,
    create_session,
    present,
)
from bench.report import machine_info
from bench.server import ServerHandle, ServerProcess, cpu_seconds

DEFAULT_RECORDING = "librivox_shakespeare_sonnet_001"
DEFAULT_LISTENERS = (100, 500, 1000)
LISTENERS_PER_CLIENT_PROCESS = 250
MAX_CLIENT_PROCESSES = 4
CONNECT_CONCURRENCY = 50
"""Handshakes in flight per client process (keeps the server's accept backlog short)."""
RSS_SAMPLE_INTERVAL_S = 0.1
MIB = 2**20


class FanoutError(RuntimeError):
    """A client process failed, or the round could not be run."""


# --- what a listener received (pure data and metrics) -------------------------------------


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event as one listener received it. Times are wall-clock unix seconds."""

    received: float
    """``time.time()`` in the client process right after the message was read."""
    ts: float
    """The event's ``ts``: server wall clock when it was numbered."""
    seq: int
    kind: str
    """The event's ``type``; for captions ``caption.draft`` or ``caption.final``."""
    live: bool
    """``ts`` is not before the moment this listener's current socket began opening, i.e.
    the event was not backfilled."""

    @property
    def delay(self) -> float:
        return self.received - self.ts


@dataclass(frozen=True, slots=True)
class ListenerRecord:
    """Everything one listener received, over all its connections."""

    index: int
    deliveries: tuple[Delivery, ...]
    finals: Mapping[int, str]
    """Source-language finals by segment (the first one of each; a final never changes)."""
    reconnects: int = 0
    closes: tuple[str, ...] = ()
    """``"code reason"`` of each close the listener did not ask for."""
    error: str | None = None
    """Why the listener could not connect at all."""
    stalled: bool = False
    """It stopped reading after connecting until told to finish (``ClientSpec.stalled``)."""


@dataclass(frozen=True, slots=True)
class DelayStats:
    """Summary of event delays in seconds; every statistic is ``None`` when there are none."""

    count: int
    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None
    min: float | None
    max: float | None


def delay_stats(values: Sequence[float]) -> DelayStats:
    """Count, p50, p95, p99 (linear interpolation, as everywhere in bench), mean and max."""
    if not values:
        return DelayStats(0, None, None, None, None, None, None)
    return DelayStats(
        count=len(values),
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        p99=percentile(values, 99),
        mean=sum(values) / len(values),
        min=min(values),
        max=max(values),
    )


def window_deliveries(
    record: ListenerRecord, start: float, end: float = math.inf
) -> list[Delivery]:
    """The live (not backfilled) deliveries of events stamped within ``[start, end]``."""
    return [d for d in record.deliveries if d.live and start <= d.ts <= end]


def window_delays(records: Iterable[ListenerRecord], start: float, end: float) -> list[float]:
    """Delays of every live event stamped within ``[start, end]``, over all listeners."""
    return [d.delay for r in records for d in window_deliveries(r, start, end)]


@dataclass(frozen=True, slots=True)
class FinalCheck:
    """One listener's finals compared with the presenter's."""

    missing: int
    """Presenter finals the listener has not got with the same text (absent or differing)."""
    differing: int
    """Of ``missing``: segments the listener has a final for, with other text."""
    extra: int
    """Finals of segments the presenter never got a final for."""

    @property
    def exact(self) -> bool:
        return self.missing == 0 and self.extra == 0


def check_finals(expected: Mapping[int, str], received: Mapping[int, str]) -> FinalCheck:
    """Compare a listener's finals (segment -> text) with the presenter's."""
    differing = sum(1 for s, text in expected.items() if s in received and received[s] != text)
    absent = sum(1 for s in expected if s not in received)
    return FinalCheck(
        missing=absent + differing,
        differing=differing,
        extra=sum(1 for s in received if s not in expected),
    )


def presenter_finals(recorded: Replay) -> dict[int, str]:
    """The presenter's source-language finals by segment (the first of each)."""
    finals: dict[int, str] = {}
    for update in recorded.caption_updates():
        if update.state == "final":
            finals.setdefault(update.segment, update.text)
    return finals


def trimmed(recording: Recording, seconds: float | None) -> Recording:
    """The first ``seconds`` of ``recording`` (all of it when ``None`` or longer)."""
    if seconds is None or seconds >= recording.duration:
        return recording
    samples = round(seconds * recording.sample_rate)
    return dataclasses.replace(recording, pcm=recording.pcm[: 2 * samples])


# --- resources: CPU and memory -------------------------------------------------------------


def own_cpu_seconds() -> float:
    """User plus system CPU seconds of this process (its threads, not its children)."""
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def machine_busy_seconds() -> float:
    """CPU seconds all cores of the machine spent busy so far (user, nice, system, irq,
    softirq; not idle, iowait or steal), whoever used them."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + t.irq + t.softirq)


@dataclass(frozen=True, slots=True)
class CpuSnapshot:
    """Cumulative CPU seconds of every party at one wall-clock moment."""

    wall: float
    server: float | None
    clients: tuple[float, ...]
    bench: float
    machine: float


def cpu_snapshot(server_pid: int | None, client_pids: Sequence[int]) -> CpuSnapshot:
    """Read every CPU counter now."""
    return CpuSnapshot(
        wall=time.monotonic(),
        server=cpu_seconds(server_pid) if server_pid is not None else None,
        clients=tuple(cpu_seconds(pid) for pid in client_pids),
        bench=own_cpu_seconds(),
        machine=machine_busy_seconds(),
    )


@dataclass(frozen=True, slots=True)
class CpuUse:
    """CPU used between two snapshots, in cores (CPU seconds per wall second)."""

    wall_s: float
    server: float | None
    clients: tuple[float, ...]
    bench: float
    machine: float

    @property
    def clients_total(self) -> float:
        return sum(self.clients)

    @property
    def other(self) -> float:
        """Busy cores not accounted to the server, the clients or this process: other
        people's work on the machine (and the kernel's)."""
        return self.machine - (self.server or 0.0) - self.clients_total - self.bench


def cpu_use(before: CpuSnapshot, after: CpuSnapshot) -> CpuUse:
    """Cores used by each party between ``before`` and ``after``."""
    wall = after.wall - before.wall
    if wall <= 0:
        raise ValueError("cpu_use needs snapshots taken in order, some time apart")
    server = (
        None
        if before.server is None or after.server is None
        else (after.server - before.server) / wall
    )
    return CpuUse(
        wall_s=wall,
        server=server,
        clients=tuple((b - a) / wall for a, b in zip(before.clients, after.clients, strict=True)),
        bench=(after.bench - before.bench) / wall,
        machine=(after.machine - before.machine) / wall,
    )


class RssSampler:
    """Peak resident memory of one process, sampled every ``RSS_SAMPLE_INTERVAL_S``.

    Memory has no change notification, so sampling is the only way to see a peak; a peak
    shorter than the interval can be missed.
    """

    def __init__(self, pid: int | None) -> None:
        self._process = psutil.Process(pid) if pid is not None else None
        self.start_bytes: int | None = None
        self.peak_bytes: int | None = None
        self._task: asyncio.Task[None] | None = None

    def _sample(self) -> int:
        assert self._process is not None
        rss = int(self._process.memory_info().rss)
        self.peak_bytes = max(self.peak_bytes or 0, rss)
        return rss

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(RSS_SAMPLE_INTERVAL_S)
            self._sample()

    async def __aenter__(self) -> RssSampler:
        if self._process is not None:
            self.start_bytes = self._sample()
            self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            with contextlib.suppress(psutil.NoSuchProcess):
                self._sample()


@asynccontextmanager
async def server_under_test(
    url: str | None, server_pid: int | None, log_path: Path, ready_timeout: float
) -> AsyncIterator[ServerHandle]:
    """The server at ``url``, or a fresh ``app.cli serve`` with an empty data directory."""
    if url is not None:
        yield ServerHandle(url.rstrip("/"), server_pid)
        return
    with tempfile.TemporaryDirectory(prefix="bench-server-data-") as data_dir:
        server = ServerProcess(log_path, env={"INTERP_DATA_DIR": data_dir})
        handle = await server.start(ready_timeout)
        try:
            yield handle
        finally:
            await server.stop()


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft open-files limit to at least ``wanted`` (up to the hard
    limit); return the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


# --- the presenter ------------------------------------------------------------------------


# --- client processes: the listeners ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """What one client process does: follow ``code`` with the listeners ``indices``."""

    base_url: str
    code: str
    indices: tuple[int, ...]
    connect_concurrency: int = CONNECT_CONCURRENCY
    open_timeout: float = 120.0
    stalled: frozenset[int] = frozenset()
    """Listeners (of ``indices``) that connect, then read nothing until :class:`Finish`:
    a stalled phone. They do not wait for the audience count."""
    nice: int = 0
    """Added to the process's nice value: a positive one lets the listeners take only CPU
    the server under test leaves (real listeners are phones, not this machine's cores)."""


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


PERMANENT_CLOSE_CODES = frozenset({1003, 1008})
"""Closes no retry can fix; the listener page (static/js/listener-socket.js) retries all others."""
MAX_RECONNECTS = 10


class Listener:
    """One audience member: follows the session, reconnecting with ``since`` after any close
    but a permanent one (1013 too far behind, 1011 keepalive timeout, ...), as the listener
    page does (which also stops once the session has ended)."""

    def __init__(self, index: int, spec: ClientSpec) -> None:
        self.index = index
        self._spec = spec
        self.deliveries: list[Delivery] = []
        self.finals: dict[int, str] = {}
        self.last_seq = 0
        self.reconnects = 0
        self.closes: list[str] = []
        self.error: str | None = None
        self.joined = asyncio.Event()
        self.settled = asyncio.Event()
        self.complete = asyncio.Event()
        self._audience_target: int | None = None
        self._audience = 0
        self._segments: frozenset[int] | None = None
        self._stopping = False
        self._ended = False
        self._ws: ClientConnection | None = None
        self.stalled = index in spec.stalled
        self._resume = asyncio.Event()

    def _url(self) -> str:
        scheme, rest = self._spec.base_url.split("://", 1)
        ws_scheme = "wss" if scheme == "https" else "ws"
        return f"{ws_scheme}://{rest}/ws/listen/{self._spec.code}?lang=en&since={self.last_seq}"

    async def follow(self, gate: asyncio.Semaphore) -> None:
        """Connect, record every message, reconnect after a close that is not permanent (at
        most :data:`MAX_RECONNECTS` times), until :meth:`stop`."""
        while not self._stopping:
            opened_at = time.time()
            try:
                async with gate:
                    ws = await connect(
                        self._url(), open_timeout=self._spec.open_timeout, ping_interval=None
                    )
            except (OSError, InvalidHandshake, TimeoutError) as error:
                self.error = f"{type(error).__name__}: {error}"
                self.joined.set()
                return
            if self._stopping:
                await ws.close()
                return
            self._ws = ws
            self.joined.set()
            if self.stalled:
                await self._resume.wait()  # read nothing meanwhile: the buffers fill up
            try:
                async for raw in ws:
                    self.on_message(time.time(), raw, opened_at)
            except ConnectionClosed:
                pass  # the close code is read below
            self._ws = None
            if self._stopping:
                return
            self.closes.append(f"{ws.close_code} {ws.close_reason}")
            if (
                self._ended
                or ws.close_code in PERMANENT_CLOSE_CODES
                or self.reconnects >= MAX_RECONNECTS
            ):
                return
            self.reconnects += 1

    def on_message(self, now: float, raw: str | bytes, opened_at: float) -> None:
        """Record one message received at ``now`` on a socket that began opening at
        ``opened_at``."""
        if isinstance(raw, bytes):
            return
        message = json.loads(raw)
        ts = float(message.get("ts", 0.0))
        seq = int(message.get("seq", 0))
        self.last_seq = max(self.last_seq, seq)
        kind = str(message.get("type"))
        if kind == "caption":
            kind = f"caption.{message.get('state')}"
        self.deliveries.append(Delivery(now, ts, seq, kind, ts >= opened_at))
        if kind == "caption.final" and message.get("source"):
            self.finals.setdefault(int(message["segment"]), str(message["text"]))
            self._check_complete()
        elif kind == "state":
            self._ended = self._ended or message.get("state") == "ended"
            self._audience = int(message.get("listeners", 0))
            self._check_settled()

    def expect_audience(self, listeners: int) -> None:
        self._audience_target = listeners
        self._check_settled()
        if self.stalled:
            self.settled.set()  # it reads nothing, so it cannot see the audience

    def expect_finals(self, segments: frozenset[int]) -> None:
        self._segments = segments
        self._check_complete()
        self._resume.set()

    def _check_settled(self) -> None:
        if self._audience_target is not None and self._audience >= self._audience_target:
            self.settled.set()

    def _check_complete(self) -> None:
        if self._segments is not None and self._segments <= self.finals.keys():
            self.complete.set()

    async def stop(self) -> None:
        """Close the socket (normal closure) and stop reconnecting."""
        self._stopping = True
        self._resume.set()
        ws = self._ws
        if ws is not None:
            await ws.close()

    def record(self) -> ListenerRecord:
        return ListenerRecord(
            index=self.index,
            deliveries=tuple(self.deliveries),
            finals=dict(self.finals),
            reconnects=self.reconnects,
            closes=tuple(self.closes),
            error=self.error,
            stalled=self.stalled,
        )


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
        raise FanoutError(f"expected Expect from the bench, got {expect!r}")
    connected = [lst for lst in listeners if lst.error is None]
    for listener in connected:
        listener.expect_audience(expect.listeners)
    complete = await _all_set((lst.settled for lst in connected), expect.timeout)
    conn.send(Settled(complete))

    finish = await asyncio.to_thread(conn.recv)
    if not isinstance(finish, Finish):
        raise FanoutError(f"expected Finish from the bench, got {finish!r}")
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
        # The process boundary: the bench raises it as a FanoutError.
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
                raise FanoutError("a client process exited without reporting") from None
            if isinstance(message, ClientFailed):
                raise FanoutError(f"a client process failed:\n{message.error}")
            if not isinstance(message, kind):
                raise FanoutError(f"expected {kind.__name__} from a client, got {message!r}")
            return message

        try:
            async with asyncio.timeout(limit_s):
                return list(await asyncio.gather(*(receive(p) for p in self._pipes)))
        except TimeoutError:
            raise FanoutError(f"client processes did not report {kind.__name__} in time") from None

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


# --- one round and the whole run ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Goals:
    """The fan-out target: at ``listeners`` listeners, p99 event delay at most this."""

    listeners: int = 1000
    delay_p99_s: float = 0.1


@dataclass(frozen=True, slots=True)
class FanoutSettings:
    """What ``python -m bench fanout`` was asked to do."""

    listeners: tuple[int, ...]
    recording: Path
    out: Path
    seconds: float | None = None
    url: str | None = None
    server_pid: int | None = None
    client_processes: int | None = None
    ready_timeout: float = 120.0
    settle_timeout: float = 180.0
    drain_timeout: float = 30.0
    goals: Goals = field(default_factory=Goals)


@dataclass(frozen=True, slots=True)
class Round:
    """Everything one round recorded (one N)."""

    listeners: int
    client_processes: int
    records: tuple[ListenerRecord, ...]
    presenter: Replay
    window: tuple[float, float]
    """Wall-clock span of the replay: ``start`` sent to ``ended`` received."""
    join_s: float
    settled: bool
    close_s: float
    cpu: CpuUse
    rss_start_bytes: int | None
    rss_peak_bytes: int | None
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]


async def run_round(
    listeners: int, recording: Recording, settings: FanoutSettings, server: ServerHandle
) -> Round:
    """Join ``listeners`` listeners, replay, drain, close; record everything."""
    processes = settings.client_processes or default_client_processes(listeners)
    session = await create_session(server.base_url, f"bench fanout {listeners}")
    specs = [
        ClientSpec(server.base_url, str(session["code"]), indices)
        for indices in split_listeners(listeners, processes)
    ]
    load_before = os.getloadavg()
    async with RssSampler(server.pid) as rss:
        pool = ClientPool(specs)
        try:
            join_started = time.monotonic()
            joined = await pool.gather(Joined, settings.settle_timeout)
            pool.send(Expect(sum(j.connected for j in joined), settings.settle_timeout))
            settled = await pool.gather(Settled, settings.settle_timeout + 30)
            join_s = time.monotonic() - join_started

            before = cpu_snapshot(server.pid, pool.pids)
            window_start = time.time()
            presenter = await present(server.base_url, session, recording)
            window_end = time.time()
            cpu = cpu_use(before, cpu_snapshot(server.pid, pool.pids))

            pool.send(Finish(frozenset(presenter_finals(presenter)), settings.drain_timeout))
            results = await pool.gather(Results, settings.drain_timeout + 120)
        except BaseException:
            await pool.close(grace=0.0)
            raise
        await pool.close()
    records = sorted((r for res in results for r in res.records), key=lambda r: r.index)
    return Round(
        listeners=listeners,
        client_processes=len(specs),
        records=tuple(records),
        presenter=presenter,
        window=(window_start, window_end),
        join_s=join_s,
        settled=all(s.complete for s in settled),
        close_s=max(res.close_s for res in results),
        cpu=cpu,
        rss_start_bytes=rss.start_bytes,
        rss_peak_bytes=rss.peak_bytes,
        load_average_before=load_before,
        load_average_after=os.getloadavg(),
    )


async def run_fanout(settings: FanoutSettings, recording: Recording) -> list[Round]:
    """One round per listener count, each against a fresh server (unless ``settings.url``)."""
    raise_fd_limit(max(settings.listeners) + 256)
    rounds: list[Round] = []
    for count in settings.listeners:
        log_path = settings.out / f"server-fanout-{count}.log"
        async with server_under_test(
            settings.url, settings.server_pid, log_path, settings.ready_timeout
        ) as server:
            rounds.append(await run_round(count, recording, settings, server))
    return rounds


# --- the report ---------------------------------------------------------------------------


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / MIB, 1)


def round_json(run: Round, goals: Goals) -> dict[str, Any]:
    """One round's metrics (see docs/metrics.md, "Fan-out")."""
    start, end = run.window
    expected = presenter_finals(run.presenter)
    checks = [check_finals(expected, r.finals) for r in run.records]
    in_window = [window_deliveries(r, start, end) for r in run.records]
    delays = [d.delay for ds in in_window for d in ds]
    join_delays = [d.delay for r in run.records for d in r.deliveries if d.live and d.ts < start]
    presenter_events = [
        m
        for r in run.presenter.received
        if (m := r.message).get("type") in ("caption", "state") and start <= m["ts"] <= end
    ]
    updates = run.presenter.caption_updates()
    stats = delay_stats(delays)
    exact = sum(c.exact for c in checks)
    cpu = run.cpu
    return {
        "listeners": run.listeners,
        "client_processes": run.client_processes,
        "connected": sum(r.error is None for r in run.records),
        "connect_failures": [f"{r.index}: {r.error}" for r in run.records if r.error][:10],
        "join_s": run.join_s,
        "settled": run.settled,
        "delay_s": asdict(stats),
        "delay_by_kind_s": {
            kind: asdict(delay_stats([d.delay for ds in in_window for d in ds if d.kind == kind]))
            for kind in sorted({d.kind for ds in in_window for d in ds})
        },
        "join_delay_s": asdict(delay_stats(join_delays)),
        "events_per_listener": asdict(distribution(len(ds) for ds in in_window)),
        "presenter_events": len(presenter_events),
        "presenter_captions": {
            "draft": sum(u.state == "draft" for u in updates),
            "final": sum(u.state == "final" for u in updates),
        },
        "finals": {
            "presenter": len(expected),
            "listeners_exact": exact,
            "missing_per_listener": asdict(distribution(c.missing for c in checks)),
            "missing_total": sum(c.missing for c in checks),
            "differing_total": sum(c.differing for c in checks),
            "extra_total": sum(c.extra for c in checks),
        },
        "reconnects": sum(r.reconnects for r in run.records),
        "closes": dict(Counter(c for r in run.records for c in r.closes).most_common(10)),
        "server": {
            "cpu_cores": cpu.server,
            "rss_start_mib": _mib(run.rss_start_bytes),
            "rss_peak_mib": _mib(run.rss_peak_bytes),
        },
        "clients": {"cpu_cores": cpu.clients_total, "cpu_cores_per_process": list(cpu.clients)},
        "bench_cpu_cores": cpu.bench,
        "machine": {
            "busy_cores": cpu.machine,
            "other_cores": cpu.other,
            "load_average_before": [round(x, 2) for x in run.load_average_before],
            "load_average_after": [round(x, 2) for x in run.load_average_after],
        },
        "replay": {
            "recording": run.presenter.recording,
            "audio_s": run.presenter.schedule.audio_seconds,
            "wall_s": end - start,
            "end_lag_s": run.presenter.ended_at - run.presenter.schedule.send_times[-1],
        },
        "close_s": run.close_s,
        "goal_met": (
            stats.p99 is not None and stats.p99 <= goals.delay_p99_s and exact == run.listeners
        ),
    }


def report_json(rounds: Sequence[Round], settings: FanoutSettings, command: str) -> dict[str, Any]:
    """The whole report as JSON-ready data."""
    goals = settings.goals
    by_n = [round_json(r, goals) for r in rounds]
    at_goal = [r for r in by_n if r["listeners"] == goals.listeners]
    return {
        "benchmark": "fanout",
        "command": command,
        "created_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "server": {
            "url": settings.url,
            "started_by_bench": settings.url is None,
            "fresh_per_round": settings.url is None,
        },
        "recording": str(settings.recording),
        "trimmed_to_s": settings.seconds,
        "goals": asdict(goals),
        "goal_met": at_goal[0]["goal_met"] if at_goal else None,
        "rounds": by_n,
    }


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{1000 * value:.0f}"


def _f(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def report_markdown(report: dict[str, Any]) -> str:
    """The report's table in Markdown."""
    machine, goals = report["machine"], report["goals"]
    goal_text = {True: "yes", False: "**no**", None: "not measured"}[report["goal_met"]]
    lines = [
        "# Fan-out benchmark: one presenter, N listeners",
        "",
        f"- Command: `{report['command']}`",
        f"- Machine: {machine['cpu_model']}, {machine['usable_cores']} usable cores, "
        f"{machine['memory_gib']} GiB, Python {machine['python']}; server, listeners and "
        "presenter all on this machine (loopback)",
        f"- Date (UTC): {report['created_utc']}",
        f"- Presenter: `{Path(report['recording']).stem}` replayed in real time"
        + (f", first {report['trimmed_to_s']} s" if report["trimmed_to_s"] else ""),
        f"- Goal: {goals['listeners']} listeners with p99 delay <= "
        f"{1000 * goals['delay_p99_s']:.0f} ms and every final at every listener: {goal_text}",
        "",
        "| listeners | client procs | delay p50 / p95 / p99 / max ms | events per listener "
        "min / median | all finals | missing finals max | reconnects | server CPU cores "
        "| server RSS start / peak MiB | client CPU cores | other load cores | join s "
        "| close s | goal |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["rounds"]:
        d, ev, fin = r["delay_s"], r["events_per_listener"], r["finals"]
        lines.append(
            f"| {r['listeners']} | {r['client_processes']} "
            f"| {_ms(d['p50'])} / {_ms(d['p95'])} / {_ms(d['p99'])} / {_ms(d['max'])} "
            f"| {_f(ev['min'], 0)} / {_f(ev['p50'], 0)} (presenter {r['presenter_events']}) "
            f"| {fin['listeners_exact']} / {r['listeners']} "
            f"| {_f(fin['missing_per_listener']['max'], 0)} | {r['reconnects']} "
            f"| {_f(r['server']['cpu_cores'])} "
            f"| {_f(r['server']['rss_start_mib'], 0)} / {_f(r['server']['rss_peak_mib'], 0)} "
            f"| {_f(r['clients']['cpu_cores'])} | {_f(r['machine']['other_cores'])} "
            f"| {_f(r['join_s'], 1)} | {_f(r['close_s'], 1)} "
            f"| {'yes' if r['goal_met'] else '**no**'} |"
        )
    lines += [
        "",
        "Delay = receipt wall time at the listener − the event's `ts`, over every live event "
        "stamped during the replay at every listener. CPU in cores = CPU seconds per wall "
        "second during the replay (this machine has "
        f'{machine["usable_cores"]}); "other load" is busy CPU not used by the server, the '
        "listeners or the bench (other work on the machine). Load average (1/5/15 min) "
        "before each round: "
        + "; ".join(
            f"N={r['listeners']}: {' / '.join(str(x) for x in r['machine']['load_average_before'])}"
            for r in report["rounds"]
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


def event_trace(run: Round) -> list[dict[str, Any]]:
    """Per event stamped during the replay: its seq, kind, ``ts`` (seconds since the replay
    began), how many listeners got it live, and their delay statistics."""
    start, end = run.window
    by_seq: dict[int, list[Delivery]] = {}
    for record in run.records:
        for delivery in window_deliveries(record, start, end):
            by_seq.setdefault(delivery.seq, []).append(delivery)
    trace = []
    for seq in sorted(by_seq):
        deliveries = by_seq[seq]
        stats = delay_stats([d.delay for d in deliveries])
        trace.append(
            {
                "seq": seq,
                "kind": deliveries[0].kind,
                "at_s": round(deliveries[0].ts - start, 3),
                "listeners": len(deliveries),
                "delay_s": {k: v if v is None else round(v, 4) for k, v in asdict(stats).items()},
            }
        )
    return trace


def write_report(
    rounds: Sequence[Round], settings: FanoutSettings, command: str
) -> tuple[Path, Path, str]:
    """Write ``fanout.json`` and ``fanout.md`` into ``settings.out``, and one per-event
    trace per round into ``traces/fanout-<N>.json``."""
    report = report_json(rounds, settings, command)
    markdown = report_markdown(report)
    settings.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = settings.out / "fanout.json", settings.out / "fanout.md"
    json_path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    traces = settings.out / "traces"
    traces.mkdir(exist_ok=True)
    for run in rounds:
        path = traces / f"fanout-{run.listeners}.json"
        path.write_text(json.dumps(event_trace(run)) + "\n", encoding="utf-8")
    return json_path, md_path, markdown
