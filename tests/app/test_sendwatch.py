"""Stalled listener sends: the process-wide watch and the listener's sender (one stage, with
a fake socket whose sends can be made to hang; the sockets' normal path runs through the
real server in the listener tests)."""

from __future__ import annotations

import asyncio

from starlette.websockets import WebSocketState

from app.listen import _send_events
from app.sendwatch import SendWatch
from engine.delivery.memory import InMemoryHub
from engine.events import Caption


class FakeSocket:
    """Records what is sent; from send number ``hang_at`` on, a send never completes."""

    def __init__(self, hang_at: int | None = None) -> None:
        self.application_state = WebSocketState.CONNECTED
        self.sent: list[str] = []
        self.closed: tuple[int, str] | None = None
        self.hang_at = hang_at

    async def send_text(self, text: str) -> None:
        if self.hang_at is not None and len(self.sent) + 1 >= self.hang_at:
            await asyncio.Event().wait()
        self.sent.append(text)

    async def send_bytes(self, data: bytes) -> None:
        raise AssertionError("no audio in these tests")

    async def close(self, code: int = 1000, reason: str = "") -> None:
        self.closed = (code, reason)
        self.application_state = WebSocketState.DISCONNECTED


def caption(segment: int) -> Caption:
    return Caption(segment, "en", True, "final", f"line {segment}", 0.0, 1.0)


async def publish(hub: InMemoryHub, count: int, first: int = 0) -> None:
    for segment in range(first, first + count):
        await hub.emit("ABC", caption(segment))


async def test_a_stalled_send_closes_the_socket_naming_since() -> None:
    hub = InMemoryHub()
    hub.open("ABC")
    sub = hub.subscribe("ABC", frozenset({"en"}))
    watch = SendWatch(timeout=0.2, interval=0.02)
    socket = FakeSocket(hang_at=3)
    sender = asyncio.create_task(_send_events(socket, sub, watch, asyncio.Lock()))  # type: ignore[arg-type]
    await publish(hub, 5)
    await asyncio.wait_for(sender, 2.0)
    assert len(socket.sent) == 2
    assert socket.closed == (1013, "send stalled; reconnect with since=3")
    assert watch.stalls == 1 and watch.in_flight == 0
    assert not watch.stalled(sender), "the sender consumed its stall"
    await watch.close()


async def test_healthy_senders_are_never_cancelled() -> None:
    hub = InMemoryHub()
    hub.open("ABC")
    watch = SendWatch(timeout=0.05, interval=0.01)
    subs = [hub.subscribe("ABC", frozenset({"en"})) for _ in range(20)]
    sockets = [FakeSocket() for _ in subs]
    senders = [
        asyncio.create_task(_send_events(s, sub, watch, asyncio.Lock()))  # type: ignore[arg-type]
        for s, sub in zip(sockets, subs, strict=True)
    ]
    for burst in range(10):
        await publish(hub, 10, first=10 * burst)
        await asyncio.sleep(0.02)
    assert all(len(s.sent) == 100 and s.closed is None for s in sockets)
    assert watch.stalls == 0 and watch.in_flight == 0
    for sender in senders:
        sender.cancel()
    results = await asyncio.gather(*senders, return_exceptions=True)
    # Cancelled from outside (the listener left), a sender re-raises instead of closing.
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    assert all(s.closed is None for s in sockets)
    await watch.close()


async def test_the_watcher_stops_when_no_send_is_in_flight() -> None:
    watch = SendWatch(timeout=1.0, interval=0.01)
    task = asyncio.current_task()
    assert task is not None
    watch.begin(task)
    watch.end(task)
    await asyncio.sleep(0.05)
    assert watch._watcher is None
    watch.begin(task)  # a later send starts it again
    assert watch._watcher is not None
    watch.end(task)
    await watch.close()
