"""One audience member on ``/ws/listen``, following a session as the listener page does.

A :class:`Listener` follows one session in the source language, records every event it
reads as a :class:`~bench.deliveries.Delivery`, pings the server as the page does (every
``ping_s``, from a random offset; the pongs are not deliveries), and reconnects with ``since``
after any close but a permanent one. The fan-out, load and soak benches run many in client processes
(``bench.clients``); the churn bench runs one per session in its own loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from dataclasses import dataclass

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from bench.deliveries import Delivery, ListenerRecord

CONNECT_CONCURRENCY = 50
"""Handshakes in flight per client process (keeps the server's accept backlog short)."""
PERMANENT_CLOSE_CODES = frozenset({1003, 1008})
"""Closes no retry can fix; the listener page (static/js/listener-socket.js) retries all others."""
MAX_RECONNECTS = 10
PAGE_PING_S = 10.0
"""How often the listener page pings an open socket (static/js/listener-socket.js)."""
PING = json.dumps({"type": "ping"})


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """What one client process does: follow ``code`` with the listeners ``indices``."""

    base_url: str
    code: str
    indices: tuple[int, ...]
    connect_concurrency: int = CONNECT_CONCURRENCY
    open_timeout: float = 120.0
    stalled: frozenset[int] = frozenset()
    """Listeners (of ``indices``) that connect, then read nothing until told to finish:
    a stalled phone. They do not wait for the audience count."""
    nice: int = 0
    """Added to the process's nice value: a positive one lets the listeners take only CPU
    the server under test leaves (real listeners are phones, not this machine's cores)."""
    ping_s: float = PAGE_PING_S
    """How often each listener pings its socket, as the page does; 0: never (as the page
    did before 2026-12-07)."""


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
        self.ended = asyncio.Event()
        """Set once a ``state`` event said the session has ended."""
        self._audience_target: int | None = None
        self._audience = 0
        self._segments: frozenset[int] | None = None
        self._stopping = False
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
            pinger = asyncio.create_task(self._ping(ws)) if self._spec.ping_s > 0 else None
            try:
                async for raw in ws:
                    self.on_message(time.time(), raw, opened_at)
            except ConnectionClosed:
                pass  # the close code is read below
            finally:
                if pinger is not None:
                    pinger.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await pinger
            self._ws = None
            if self._stopping:
                return
            self.closes.append(f"{ws.close_code} {ws.close_reason}")
            if (
                self.ended.is_set()
                or ws.close_code in PERMANENT_CLOSE_CODES
                or self.reconnects >= MAX_RECONNECTS
            ):
                return
            self.reconnects += 1

    async def _ping(self, ws: ClientConnection) -> None:
        """Ping every ``ping_s``, the first at a random point of the first period (pages open
        at different moments), until the socket closes."""
        period = self._spec.ping_s
        await asyncio.sleep(random.uniform(0, period))
        with contextlib.suppress(ConnectionClosed):
            while True:
                await ws.send(PING)
                await asyncio.sleep(period)

    def on_message(self, now: float, raw: str | bytes, opened_at: float) -> None:
        """Record one message received at ``now`` on a socket that began opening at
        ``opened_at``."""
        if isinstance(raw, bytes):
            return
        message = json.loads(raw)
        if message.get("type") == "pong":
            return  # the answer to a ping: no event
        ts = float(message.get("ts", 0.0))
        seq = int(message.get("seq", 0))
        self.last_seq = max(self.last_seq, seq)
        kind = str(message.get("type"))
        if kind == "caption":
            kind = f"caption.{message.get('state')}"
        rev = int(message.get("rev", 0))
        self.deliveries.append(Delivery(now, ts, seq, kind, ts >= opened_at, rev))
        if kind == "caption.final" and message.get("source"):
            self.finals.setdefault(int(message["segment"]), str(message["text"]))
            self._check_complete()
        elif kind == "state":
            if message.get("state") == "ended":
                self.ended.set()
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
