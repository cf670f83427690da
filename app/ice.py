"""STUN and TURN servers for WebRTC (``INTERP_ICE_SERVERS``); none by default.

With no servers, peers exchange host candidates only: that works on a LAN and on loopback.
Across NATs a STUN server finds each side's public address, and where UDP between the two
cannot pass at all (symmetric NATs, firewalls allowing only TCP 443) a TURN server relays the
media. The same list configures the server's aiortc peers and the browser's
``RTCPeerConnection`` (``GET /api/webrtc/config``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCHEMES = ("stun:", "stuns:", "turn:", "turns:")


@dataclass(frozen=True, slots=True)
class IceServer:
    """One entry of ``RTCConfiguration.iceServers``."""

    urls: tuple[str, ...]
    username: str | None = None
    credential: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The browser's ``RTCIceServer`` dictionary."""
        data: dict[str, Any] = {"urls": list(self.urls)}
        if self.username is not None:
            data["username"] = self.username
        if self.credential is not None:
            data["credential"] = self.credential
        return data


def _server(urls: object, username: object = None, credential: object = None) -> IceServer:
    if isinstance(urls, str):
        urls = [urls]
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise ValueError("ICE server 'urls' must be a URL or a list of URLs")
    for url in urls:
        if not url.startswith(SCHEMES):
            raise ValueError(f"ICE server URLs start with stun:, stuns:, turn: or turns: {url!r}")
    if username is not None and not isinstance(username, str):
        raise ValueError("ICE server 'username' must be a string")
    if credential is not None and not isinstance(credential, str):
        raise ValueError("ICE server 'credential' must be a string")
    if any(u.startswith(("turn:", "turns:")) for u in urls) and (not username or not credential):
        raise ValueError("a TURN server needs 'username' and 'credential'")
    return IceServer(tuple(urls), username, credential)


def parse_ice_servers(text: str) -> tuple[IceServer, ...]:
    """``INTERP_ICE_SERVERS``: either comma-separated STUN URLs
    (``stun:stun.example.org:3478``) or a JSON list of ``RTCIceServer`` objects, which TURN
    servers need for their credentials
    (``[{"urls": "turn:turn.example.org:3478", "username": "u", "credential": "p"}]``)."""
    text = text.strip()
    if not text:
        return ()
    if text.startswith("["):
        entries = json.loads(text)
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError("INTERP_ICE_SERVERS: expected a JSON list of objects")
        return tuple(
            _server(e.get("urls"), e.get("username"), e.get("credential")) for e in entries
        )
    return tuple(_server(url.strip()) for url in text.split(",") if url.strip())
