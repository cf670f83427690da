"""Origin checks (WebSockets, WebRTC offers): browsers send Origin; only the app's own pages
may connect."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from app.settings import Settings


def origin_allowed(websocket: HTTPConnection, settings: Settings) -> bool:
    """True for non-browser clients (no Origin header), the server's own origin, and the
    origins listed in settings."""
    origin = websocket.headers.get("origin")
    if origin is None:
        return True
    host = websocket.headers.get("host", "")
    own = {f"http://{host}", f"https://{host}"}
    return origin in own or origin in settings.allowed_origins
