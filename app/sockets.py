"""What both WebSocket endpoints do first (check the origin, accept, find the session), and
the answer to a ping that every control channel gives."""

from __future__ import annotations

import contextlib
import json

from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketState

from app.origin import origin_allowed
from app.services import Engine, NotReady, Services
from engine.session import Session
from engine.telemetry import session_code

PONG = json.dumps({"type": "pong"})
"""The answer to a ping on every client's control channel (the presenter and listener
sockets, the WebRTC presenter's data channel; docs/protocol.md): a client tells a connection
that died without closing by the pongs that stop coming (static/js/heartbeat.js)."""


def close_reason(reason: str, limit: int = 123) -> str:
    """``reason`` cut to at most ``limit`` bytes of UTF-8 (a close frame's limit), never
    inside a character."""
    return reason.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


async def close(websocket: WebSocket, code: int, reason: str) -> None:
    """Close with a code and a reason (at most 123 bytes on the wire), if still open."""
    if websocket.application_state != WebSocketState.DISCONNECTED:
        with contextlib.suppress(RuntimeError, WebSocketDisconnect):
            await websocket.close(code=code, reason=close_reason(reason))


def services_of(websocket: WebSocket) -> Services:
    services: Services = websocket.state.services
    return services


async def accept_for_session(websocket: WebSocket) -> tuple[Engine, Session] | None:
    """Accept a socket for ``/ws/.../{code}``; None (socket closed) if its origin is not
    allowed (1008), the models are still loading (1013: try again) or no such session
    exists (1008). Log lines from here on carry the code."""
    services = services_of(websocket)
    if not origin_allowed(websocket, services.settings):
        await websocket.close(code=1008, reason="origin not allowed")
        return None
    await websocket.accept()
    try:
        engine = services.engine()
    except NotReady as exc:
        await close(websocket, 1013, str(exc))
        return None
    session = await engine.registry.get(websocket.path_params["code"])
    if session is None:
        await close(websocket, 1008, "no session with that code")
        return None
    session_code.set(session.code)
    return engine, session
