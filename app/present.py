"""WebSocket ``/ws/present/{code}``: the presenter's audio in, the session's events out.

State machine: CONNECTED --start--> STREAMING --stop--> (finalise) ENDED, close 1000.
Anything out of order closes the socket with the code and reason of docs/protocol.md; the
server, the session and other sessions carry on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from app.services import Services
from app.sockets import accept_for_session, close
from engine import languages
from engine.delivery.hub import ListenerTooSlow, Subscription, SubscriptionClosed
from engine.events import to_json
from engine.session import AUTO, PresenterStream, Session, StreamError
from engine.store.base import verify_token

log = logging.getLogger(__name__)

MIN_RATE, MAX_RATE = 8000, 96000
START_TIMEOUT = 15.0


class ProtocolViolation(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def _parse_start(
    message: dict[str, Any], session: Session, services: Services
) -> tuple[int, str, bool]:
    """(sample rate, language or "auto", fast finals) of a valid ``start`` message."""
    text = message.get("text")
    if text is None:
        raise ProtocolViolation(1003, "expected a text 'start' message before any audio")
    try:
        data = json.loads(text)
    except ValueError:  # includes JSONDecodeError and over-long integers
        raise ProtocolViolation(1003, "start message is not valid JSON") from None
    if not isinstance(data, dict) or data.get("type") != "start":
        raise ProtocolViolation(1003, 'first message must be {"type": "start", ...}')
    token = data.get("token")
    if not isinstance(token, str) or not verify_token(session.record, token):
        raise ProtocolViolation(1008, "wrong presenter token")
    if data.get("encoding", "pcm_s16le") != "pcm_s16le":
        raise ProtocolViolation(1003, "unsupported encoding; only pcm_s16le is accepted")
    rate = data.get("sample_rate", 16000)
    if not isinstance(rate, int) or isinstance(rate, bool) or not MIN_RATE <= rate <= MAX_RATE:
        raise ProtocolViolation(1003, f"sample_rate must be an integer {MIN_RATE}-{MAX_RATE}")
    finals = data.get("finals", "careful")
    if finals not in ("careful", "fast"):
        raise ProtocolViolation(1003, 'finals must be "careful" or "fast"')
    fast = finals == "fast"
    language = data.get("language", session.record.source_language)
    if language == AUTO:  # detected among the session's languages (Session.open_stream)
        return rate, language, fast
    if not isinstance(language, str) or not languages.is_known(language):
        raise ProtocolViolation(1003, f"unknown language {language!r}")
    language = languages.normalise(language)
    if not services.can_recognise(language):
        raise ProtocolViolation(1003, f"no recognition model for {language!r}")
    return rate, language, fast


async def _forward(websocket: WebSocket, subscription: Subscription) -> None:
    """Send the session's events to the presenter as they are published."""
    try:
        while True:
            event = await subscription.get()
            await websocket.send_text(to_json(event))
    except (SubscriptionClosed, ListenerTooSlow, WebSocketDisconnect, RuntimeError):
        return


async def present_endpoint(websocket: WebSocket) -> None:
    accepted = await accept_for_session(websocket)
    if accepted is None:
        return
    services, session = accepted
    if not services.ready.is_set():
        await close(websocket, 1013, "models are still loading; try again shortly")
        return
    stream: PresenterStream | None = None
    subscription: Subscription | None = None
    forwarder: asyncio.Task[None] | None = None
    try:
        try:
            first = await asyncio.wait_for(websocket.receive(), START_TIMEOUT)
        except TimeoutError:
            raise ProtocolViolation(1008, "no start message within 15 s") from None
        if first["type"] == "websocket.disconnect":
            return
        rate, language, fast_finals = _parse_start(first, session, services)
        live = sum(1 for s in services.registry if s.stream is not None and not s.stream.finished)
        if live >= services.settings.max_live_streams:
            raise ProtocolViolation(1013, "server is at its limit of live streams")
        stream = session.open_stream(
            rate, language, services.settings.limits, fast_finals=fast_finals
        )
        subscription = services.hub.subscribe(session.code, frozenset(), 0, counted=False)
        forwarder = asyncio.create_task(_forward(websocket, subscription))
        stream.start()
        await websocket.send_text(json.dumps({"type": "ready", "sample_rate": 16000}))
        await session.set_state("live")
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes")
            if data is not None:
                stream.feed(data)
                continue
            try:
                control = json.loads(message.get("text") or "")
            except ValueError:  # includes JSONDecodeError and over-long integers
                raise ProtocolViolation(1003, "text message is not valid JSON") from None
            kind = control.get("type") if isinstance(control, dict) else None
            if kind == "stop":
                await stream.finish()
                stream = None
                await session.drain_translation()
                await services.hub.settle(session.code)  # a shared hub delivers by reading back
                # Closing the queue lets the forwarder send what it holds, then return.
                subscription.queue.close()
                await forwarder
                await websocket.send_text(json.dumps({"type": "ended"}))
                await close(websocket, 1000, "stream finalised")
                return
            if kind == "start":
                raise ProtocolViolation(1003, "stream already started")
            if kind not in ("ping",):
                raise ProtocolViolation(1003, f"unknown message type {kind!r}")
    except (ProtocolViolation, StreamError) as exc:
        await close(websocket, exc.code, exc.reason)
    except WebSocketDisconnect:
        pass
    finally:
        # A presenter who vanishes still gets everything said finalised for the audience.
        if stream is not None:
            await stream.finish()
        if subscription is not None:
            services.hub.unsubscribe(subscription)
        if forwarder is not None:
            forwarder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await forwarder
