"""The HTTP API of captions pushed out (docs/protocol.md): the presenter names a YouTube Live
caption ingestion URL or a Zoom caption API token and a language; the console reads the last
send and the last error. Sending is engine/delivery/push.py's; this module checks requests."""

from __future__ import annotations

from typing import get_args
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from app.api import json_body, presenter_session, services_of
from app.errors import error
from engine import languages
from engine.delivery.push import PushTarget
from engine.delivery.push_formats import Service

MAX_URL = 2048


def host_allowed(host: str, allowed: tuple[str, ...]) -> bool:
    """Whether ``host`` is one of ``allowed`` (``*.example.com`` covers its subdomains)."""
    host = host.lower().rstrip(".")
    for pattern in allowed:
        pattern = pattern.lower()
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def _service(request: Request) -> Service | None:
    service = request.path_params["service"]
    return service if service in get_args(Service) else None


async def set_push(request: Request) -> Response:
    """``PUT /api/sessions/{code}/push/{service}`` (presenter token) with ``{"url": str,
    "lang": str}``: push every later final in ``lang`` to ``url``."""
    session = await presenter_session(request)
    if isinstance(session, JSONResponse):
        return session
    service = _service(request)
    if service is None:
        return error(404, "service must be youtube or zoom")
    data = await json_body(request)
    if isinstance(data, JSONResponse):
        return data
    url, lang = data.get("url"), data.get("lang", session.record.source_language)
    if not isinstance(url, str) or len(url) > MAX_URL:
        return error(422, f"url must be a string of at most {MAX_URL} characters")
    try:
        parts = urlsplit(url.strip())
        web = parts.scheme in ("http", "https") and parts.port != 0
        host = parts.hostname if web else None
    except ValueError:  # an unclosed IPv6 bracket; .port of a port past 65535
        host = None
    if not host:
        return error(422, "url must be an http or https URL")
    allowed = services_of(request).settings.push_hosts
    if not host_allowed(host, allowed):
        return error(422, f"captions may be pushed to {', '.join(allowed)} only")
    if not isinstance(lang, str) or not languages.is_known(lang):
        return error(422, f"lang must be one of {', '.join(session.offered)}")
    lang = languages.normalise(lang)
    if lang not in session.offered:
        return error(422, f"lang must be one of {', '.join(session.offered)}")
    if session.pushes is None:
        return error(503, "this server pushes no captions")
    status = await session.push_to(PushTarget(service, url.strip(), lang))
    return JSONResponse(status.as_json())


async def stop_push(request: Request) -> Response:
    """``DELETE /api/sessions/{code}/push/{service}`` (presenter token)."""
    session = await presenter_session(request)
    if isinstance(session, JSONResponse):
        return session
    service = _service(request)
    if service is None:
        return error(404, "service must be youtube or zoom")
    stopped = await session.stop_push(service)
    return JSONResponse({"service": service, "stopped": stopped})


async def push_target(request: Request) -> Response:
    """``PUT`` or ``DELETE /api/sessions/{code}/push/{service}``."""
    if request.method == "DELETE":
        return await stop_push(request)
    return await set_push(request)


async def get_push(request: Request) -> Response:
    """``GET /api/sessions/{code}/push`` (presenter token) -> ``{"targets": [...]}``: each
    target's service, language, host, counts, last send and last error (never its URL)."""
    session = await presenter_session(request)
    if isinstance(session, JSONResponse):
        return session
    statuses = [] if session.pushes is None else session.pushes.statuses()
    return JSONResponse({"targets": [status.as_json() for status in statuses]})
