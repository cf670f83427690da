"""How refusals and unreadiness reach HTTP clients: one table of statuses, used by every
HTTP route (each socket has its own table of close codes: app/present.py, app/listen.py)."""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from app.services import NotReady
from engine.refusals import Refusal, Refused
from engine.workers import Saturated

HTTP_STATUS: dict[Refusal, int] = {
    Refusal.NO_CREDENTIALS: 401,
    Refusal.BAD_CREDENTIALS: 403,
    Refusal.UNKNOWN_LANGUAGE: 400,
    Refusal.NO_MODEL: 400,
    Refusal.BAD_AUDIO: 400,
    Refusal.MESSAGE_TOO_BIG: 413,
    Refusal.TOO_FAST: 429,
    Refusal.TOO_LONG: 413,
    Refusal.SESSION_ENDED: 410,
    Refusal.ALREADY_LIVE: 409,
    Refusal.AT_CAPACITY: 503,
    Refusal.BAD_REQUEST: 422,
    Refusal.NOT_FOUND: 404,
    Refusal.ALREADY_DECIDED: 409,
    Refusal.UNKNOWN_SEGMENT: 404,
    Refusal.BAD_EDIT: 422,
    Refusal.WRONG_PASSCODE: 401,
    Refusal.NOT_PRIVATE: 409,
}
"""HTTP status of each refusal (every HTTP route and WebRTC offers)."""

RETRY_AFTER_S = 5
"""What a 503 for loading models asks the client to wait."""


def error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


async def refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return error(HTTP_STATUS[exc.reason], exc.message)


STARTING_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{wait}"><title>Starting up</title></head>
<body><p>The interpreter is starting up: {message}. This page reloads itself.</p></body></html>
"""


async def not_ready(request: Request, exc: Exception) -> Response:
    """503 with ``Retry-After``: JSON for API clients, a page that reloads itself for a
    browser that opened a page while the models load."""
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    if "text/html" in request.headers.get("accept", ""):
        page = STARTING_PAGE.format(wait=RETRY_AFTER_S, message=html.escape(str(exc)))
        return HTMLResponse(page, status_code=503, headers=headers)
    return JSONResponse({"error": str(exc)}, status_code=503, headers=headers)


async def saturated(request: Request, exc: Exception) -> Response:
    """A worker pool is full (engine/workers.py): 503, try again shortly."""
    headers = {"Retry-After": str(RETRY_AFTER_S)}
    return JSONResponse({"error": str(exc)}, status_code=503, headers=headers)


async def client_gone(request: Request, exc: Exception) -> Response:
    """The client closed the connection before its body ended (a phone losing its network
    mid-upload): nobody will read the answer, and it is not the server's error to log."""
    return error(400, "the request ended before its body did")


EXCEPTION_HANDLERS = {
    Refused: refused,
    NotReady: not_ready,
    Saturated: saturated,
    ClientDisconnect: client_gone,
}
"""Starlette exception handlers: a route raises, the table answers."""
