"""The body of a WebRTC offer (app/webrtc_offer.py): its fields and its audio directions,
without a server or a peer connection (tests/app/test_webrtc.py posts real offers)."""

from __future__ import annotations

from typing import Any

import pytest

from app.webrtc_offer import Offer, OfferError, audio_directions, parse_offer

SESSION = "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n"


def section(kind: str, direction: str | None) -> str:
    codec = "a=rtpmap:111 opus/48000/2\r\n" if kind == "audio" else "a=rtpmap:96 VP8/90000\r\n"
    payload = "111" if kind == "audio" else "96"
    line = f"a={direction}\r\n" if direction else ""
    return f"m={kind} 9 UDP/TLS/RTP/SAVPF {payload}\r\nc=IN IP4 0.0.0.0\r\n{codec}{line}"


GOOD: dict[str, Any] = {"type": "offer", "sdp": SESSION + section("audio", None), "role": "listen"}


def test_a_well_formed_offer_is_read_whole() -> None:
    assert parse_offer(GOOD) == Offer(GOOD["sdp"], "listen", None, None)
    body = {**GOOD, "sdp": "\r\n" + GOOD["sdp"], "role": "present", "token": "t", "lang": "es"}
    assert parse_offer(body) == Offer(body["sdp"], "present", "t", "es")
    assert parse_offer({**body, "since": 42}) == Offer(body["sdp"], "present", "t", "es", 42)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"type": "answer"}, 'type must be "offer"'),
        ({"type": None}, 'type must be "offer"'),
        ({"sdp": "hello"}, "sdp must be an SDP offer"),
        ({"sdp": None}, "sdp must be an SDP offer"),
        ({"role": "dance"}, 'role must be "present" or "listen"'),
        ({"role": None}, 'role must be "present" or "listen"'),
        ({"token": 7}, "token must be a string"),
        ({"lang": ["en"]}, "lang must be a language code"),
        ({"since": -1}, "since must be a non-negative integer"),
        ({"since": "3"}, "since must be a non-negative integer"),
        ({"since": True}, "since must be a non-negative integer"),
    ],
)
def test_a_malformed_offer_is_a_400_naming_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(OfferError) as caught:
        parse_offer({**GOOD, **change})
    assert caught.value.status == 400
    assert caught.value.message.startswith(message), caught.value.message


def test_audio_directions_of_each_audio_section_only() -> None:
    text = SESSION + section("audio", "sendonly") + section("video", "recvonly")
    assert audio_directions(text + section("audio", None)) == ["sendonly", "sendrecv"]
    assert audio_directions(SESSION + section("audio", "recvonly")) == ["recvonly"]
    assert audio_directions(SESSION + section("video", "sendrecv")) == []  # media, no audio


@pytest.mark.parametrize("text", [SESSION, "v=0\r\nm=audio x\r\n"])
def test_sdp_without_media_or_unparsable_is_a_400(text: str) -> None:
    with pytest.raises(OfferError) as caught:
        audio_directions(text)
    assert caught.value.status == 400
    assert caught.value.message.startswith("malformed SDP offer"), caught.value.message
