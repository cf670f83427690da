"""The body of a WebRTC offer (``POST /api/sessions/{code}/webrtc/offer``, docs/protocol.md):
its fields, and the directions of its audio sections. Pure: nothing here touches a session or a
peer connection; :class:`OfferError` carries the HTTP status the endpoint answers with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiortc import sdp

from app import json_text


class OfferError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Offer:
    sdp: str
    role: str
    token: str | None
    lang: str | None
    since: int = 0
    """A presenter's: the newest event seq its console holds (backfilled from after it)."""


def parse_offer(data: dict[str, Any]) -> Offer:
    """The body of an offer; :class:`OfferError` (400) when malformed."""
    text = data.get("sdp")
    if data.get("type") != "offer":
        raise OfferError(400, 'type must be "offer"')
    if not isinstance(text, str) or not text.lstrip().startswith("v=0"):
        raise OfferError(400, "sdp must be an SDP offer (text starting with v=0)")
    role = data.get("role")
    if role not in ("present", "listen"):
        raise OfferError(400, 'role must be "present" or "listen"')
    token = data.get("token")
    lang = data.get("lang")
    if token is not None and not isinstance(token, str):
        raise OfferError(400, "token must be a string")
    if lang is not None and not isinstance(lang, str):
        raise OfferError(400, "lang must be a language code")
    since = data.get("since", 0)
    if not json_text.is_seq(since):
        raise OfferError(400, "since must be a non-negative integer")
    return Offer(text, role, token, lang, since)


def audio_directions(text: str) -> list[str]:
    """Directions of the offer's audio sections (from the offerer's side); 400 when the SDP
    cannot be parsed or has no media at all."""
    try:
        description = sdp.SessionDescription.parse(text)
    except Exception as exc:  # the parser raises whatever its input provokes
        raise OfferError(400, f"malformed SDP offer: {type(exc).__name__}: {exc}") from None
    if not description.media:
        raise OfferError(400, "malformed SDP offer: no media sections")
    return [m.direction or "sendrecv" for m in description.media if m.kind == "audio"]
