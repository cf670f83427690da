"""The HTTP API of private sessions (docs/protocol.md): join with the passcode, a listener
token for the presenter's share link, passcode rotation. The rules are engine/access.py's;
refusals answer through the status table of app/errors.py."""

from __future__ import annotations

import hashlib
import secrets

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.api import bearer, json_body, listen_url, services_of, session_or_404
from app.errors import error
from engine.refusals import Refused

_GUESS_KEY = secrets.token_bytes(16)
"""Keys the fingerprints of wrong passcodes (kept in memory, never the passcodes)."""


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _guess(code: str, passcode: str) -> bytes:
    """What a wrong guess tried: the same passcode (as checked: stripped) for the same
    session is the same guess, whoever typed it."""
    tried = f"{code}\0{passcode.strip()}".encode("utf-8", "surrogatepass")
    return hashlib.blake2b(tried, key=_GUESS_KEY, digest_size=16).digest()


def _token_reply(code: str, token: str) -> JSONResponse:
    return JSONResponse({"listener_token": token, "listen_url": listen_url(code, token)})


async def join(request: Request) -> Response:
    """``POST /api/sessions/{code}/join`` ``{"passcode": ...}`` -> ``{"listener_token",
    "listen_url"}``. A wrong passcode answers 401 and counts against the client address,
    once however often it is typed (a venue's attendees share one address, and make the same
    typos); past ``passcode_guesses_per_minute`` different wrong ones every join from it
    answers 429."""
    services = services_of(request)
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    passcode = data.get("passcode")
    if not isinstance(passcode, str):
        return error(422, "passcode must be a string")
    client = _client(request)
    wait = services.passcode_guesses.wait(client)
    if wait is not None:
        return JSONResponse(
            {"error": "too many wrong passcodes; try again later", "retry_after": round(wait, 1)},
            status_code=429,
            headers={"Retry-After": str(max(1, round(wait)))},
        )
    try:
        token = await services.engine().access.join(session, passcode)
    except Refused:
        services.passcode_guesses.allow(client, _guess(session.code, passcode))
        raise
    return _token_reply(session.code, token)


async def listener_token(request: Request) -> Response:
    """``POST /api/sessions/{code}/listener-token`` (presenter token as ``Authorization:
    Bearer``) -> ``{"listener_token", "listen_url"}``: for the share link and the QR code."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    token = await services_of(request).engine().access.grant(session, bearer(request))
    return _token_reply(session.code, token)


async def set_passcode(request: Request) -> Response:
    """``PUT /api/sessions/{code}/passcode`` (presenter token) ``{"passcode": ...}``: a new
    passcode for later joins; listeners who joined before keep their tokens."""
    session = await session_or_404(request)
    if isinstance(session, JSONResponse):
        return session
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    access = services_of(request).engine().access
    await access.rotate(session, bearer(request), data.get("passcode"))
    return JSONResponse({"code": session.code, "private": True})
