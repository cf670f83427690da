"""One aiortc peer connection's lifetime, and every open one of this process.

A :class:`Peer` is closed once: when its connection fails or closes, when it has not connected
``CONNECT_TIMEOUT`` after its answer, when its session ends (it sees the ``ended`` state on its
subscription) and at shutdown (:meth:`PeerRegistry.close_all` from the lifespan). Closing
releases what the role holds (:meth:`Peer.release`: app/webrtc_presenter.py,
app/webrtc_listener.py), closes the connection, cancels the peer's tasks and leaves the registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aiortc import RTCPeerConnection

from engine.session import Session

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
"""A peer that has not connected this long after its answer is closed (its stream finalised)."""


async def close_connection(pc: RTCPeerConnection) -> None:
    """Close ``pc`` whatever state a client's offer left it in: aiortc's own close can raise
    on a connection that read an odd offer (one whose audio section names no mid leaves its
    data channel's transport unset), and a refusal or a closing peer must not become a 500."""
    try:
        await pc.close()
    except Exception as exc:
        log.info("closing a webrtc connection: %r", exc)


class Peer:
    """One aiortc peer connection of a session, closed once (idempotent :meth:`close`)."""

    def __init__(self, pc: RTCPeerConnection, session: Session, registry: PeerRegistry) -> None:
        self.pc = pc
        self.session = session
        self.registry = registry
        self.connected = asyncio.Event()
        self._closing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        pc.on("connectionstatechange", self._on_connection_state)

    def spawn(self, coro: Any, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def watch(self) -> None:
        """Close the peer if it does not connect within ``CONNECT_TIMEOUT``."""
        self.spawn(self._connect_deadline(), f"webrtc-deadline-{self.session.code}")

    async def _connect_deadline(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.connected.wait(), CONNECT_TIMEOUT)
            return
        log.info("webrtc peer of %s did not connect in %.0f s", self.session.code, CONNECT_TIMEOUT)
        self.close_soon()

    def _on_connection_state(self) -> None:
        state = self.pc.connectionState
        if state == "connected":
            self.connected.set()
        elif state in ("failed", "closed"):
            self.close_soon()

    @property
    def closing(self) -> bool:
        """Whether the peer has begun to close (for whatever reason)."""
        return self._closing is not None

    def close_soon(self) -> None:
        if self._closing is None:
            self._closing = asyncio.create_task(self._close(), name="webrtc-close")

    async def close(self) -> None:
        self.close_soon()
        assert self._closing is not None
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        try:
            await self.release()
        except Exception:
            log.exception("closing a webrtc peer of %s", self.session.code)
        finally:
            await close_connection(self.pc)
            current = asyncio.current_task()
            for task in list(self._tasks):
                if task is not current:
                    task.cancel()
            self.registry.discard(self)

    async def release(self) -> None:
        """What the peer holds beyond its connection (subclasses)."""


class PeerRegistry:
    """Every open peer connection of this process (closed at shutdown), of which at most
    ``listener_limit`` are listeners' (``Settings.max_webrtc_listeners``). A presenter's
    peer is not counted against it: the live-stream limit bounds those, and a listener's
    offer needs no token on a public session."""

    def __init__(self, listener_limit: int) -> None:
        self.listener_limit = listener_limit
        self._peers: set[Peer] = set()
        self._listeners: set[Peer] = set()

    def __len__(self) -> int:
        return len(self._peers)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._peers))

    @property
    def listeners_full(self) -> bool:
        """Whether another listener's peer would pass the limit."""
        return len(self._listeners) >= self.listener_limit

    def add(self, peer: Peer, *, listener: bool) -> None:
        self._peers.add(peer)
        if listener:
            self._listeners.add(peer)

    def discard(self, peer: Peer) -> None:
        self._peers.discard(peer)
        self._listeners.discard(peer)

    async def close_all(self) -> None:
        await asyncio.gather(*(p.close() for p in list(self._peers)), return_exceptions=True)
