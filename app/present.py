"""WebSocket ``/ws/present/{code}``: the presenter's audio in, the session's events out.

State machine: CONNECTED --start--> STREAMING --stop--> (finalise) ENDED, close 1000.
Everything the presenter does goes through the engine's presenting API
(engine/presenting.py); this module parses messages and maps refusals to close codes in one
table. Anything out of order closes the socket with the code and reason of
docs/protocol.md; the server, the session and other sessions carry on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected

from app import json_text
from app.sockets import PONG, accept_for_session, close
from engine.delivery.hub import ListenerTooSlow, SubscriptionClosed
from engine.events import to_json
from engine.presenting import Presentation, StartRequest
from engine.refusals import Refusal, Refused

START_TIMEOUT = 15.0

CLOSE_CODE: dict[Refusal, int] = {
    Refusal.NO_CREDENTIALS: 1008,
    Refusal.BAD_CREDENTIALS: 1008,
    Refusal.UNKNOWN_LANGUAGE: 1003,
    Refusal.NO_MODEL: 1003,
    Refusal.BAD_AUDIO: 1003,
    Refusal.MESSAGE_TOO_BIG: 1009,
    Refusal.TOO_FAST: 1008,
    Refusal.TOO_LONG: 1008,
    Refusal.SESSION_ENDED: 1008,
    Refusal.ALREADY_LIVE: 1013,
    Refusal.AT_CAPACITY: 1013,
    Refusal.BAD_REQUEST: 1003,
    Refusal.NOT_FOUND: 1008,
    Refusal.ALREADY_DECIDED: 1008,
    Refusal.WRONG_PASSCODE: 1008,
    Refusal.NOT_PRIVATE: 1008,
}
"""The close code of each refusal (docs/protocol.md)."""


class ProtocolViolation(Exception):
    """A message the presenter socket's protocol does not allow (always 1003 or 1008)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


def parse_start(message: Mapping[str, Any]) -> StartRequest:
    """The :class:`StartRequest` of a well-formed ``start`` message (the engine checks what
    it asks for)."""
    text = message.get("text")
    if text is None:
        raise ProtocolViolation(1003, "expected a text 'start' message before any audio")
    try:
        data = json_text.parse(text)
    except json_text.NotJson:
        raise ProtocolViolation(1003, "start message is not valid JSON") from None
    if not isinstance(data, dict) or data.get("type") != "start":
        raise ProtocolViolation(1003, 'first message must be {"type": "start", ...}')
    token = data.get("token")
    if not isinstance(token, str):
        raise ProtocolViolation(1008, "wrong presenter token")
    if data.get("encoding", "pcm_s16le") != "pcm_s16le":
        raise ProtocolViolation(1003, "unsupported encoding; only pcm_s16le is accepted")
    rate = data.get("sample_rate", 16000)
    if not isinstance(rate, int) or isinstance(rate, bool):
        raise ProtocolViolation(1003, "sample_rate must be an integer")
    finals = data.get("finals", "careful")
    if finals not in ("careful", "fast"):
        raise ProtocolViolation(1003, 'finals must be "careful" or "fast"')
    language = data.get("language")
    if language is not None and not isinstance(language, str):
        raise ProtocolViolation(1003, f"unknown language {language!r}")
    since = data.get("since", 0)
    if not json_text.is_seq(since):
        raise ProtocolViolation(1003, "since must be a non-negative integer")
    return StartRequest(
        token=token, sample_rate=rate, language=language, finals=finals, since=since
    )


async def _forward(websocket: WebSocket, presentation: Presentation) -> None:
    """Send the session's events to the presenter as they are published, and the stream's
    lag when it is behind (:meth:`Presentation.next_event`)."""
    try:
        while True:
            event = await presentation.next_event()
            await websocket.send_text(to_json(event))
    except (SubscriptionClosed, ListenerTooSlow, WebSocketDisconnect, RuntimeError):
        return


async def present_endpoint(websocket: WebSocket) -> None:
    accepted = await accept_for_session(websocket)
    if accepted is None:
        return
    engine, session = accepted
    presentation: Presentation | None = None
    forwarder: asyncio.Task[None] | None = None
    try:
        try:
            first = await asyncio.wait_for(websocket.receive(), START_TIMEOUT)
        except TimeoutError:
            raise ProtocolViolation(1008, "no start message within 15 s") from None
        if first["type"] == "websocket.disconnect":
            return
        presentation = await engine.presenting.start(session, parse_start(first))
        forwarder = asyncio.create_task(_forward(websocket, presentation))
        await websocket.send_text(json.dumps({"type": "ready", "sample_rate": 16000}))
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes")
            if data is not None:
                presentation.feed(data)
                continue
            try:
                control = json_text.parse(message.get("text") or "")
            except json_text.NotJson:
                raise ProtocolViolation(1003, "text message is not valid JSON") from None
            kind = control.get("type") if isinstance(control, dict) else None
            if kind == "stop":
                await presentation.stop()
                await forwarder  # it sends what the closed view holds, then returns
                await websocket.send_text(json.dumps({"type": "ended"}))
                await close(websocket, 1000, "stream finalised")
                return
            if kind == "start":
                raise ProtocolViolation(1003, "stream already started")
            if kind == "ping":  # the console knows its connection is alive by the answer
                await websocket.send_text(PONG)
                continue
            raise ProtocolViolation(1003, f"unknown message type {kind!r}")
    except ProtocolViolation as exc:
        await close(websocket, exc.code, exc.reason)
    except Refused as exc:
        await close(websocket, CLOSE_CODE[exc.reason], exc.message)
    except (WebSocketDisconnect, WebSocketDisconnected):
        pass  # the presenter left (after "stop" too, before "ended" could reach them)
    finally:
        # A presenter who vanishes still gets everything said finalised for the audience.
        if presentation is not None:
            await presentation.release()
        if forwarder is not None:
            forwarder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await forwarder
