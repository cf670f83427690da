"""Close reasons fit a close frame (123 bytes of UTF-8) whatever the client sent."""

from __future__ import annotations

from app.sockets import close_reason


def test_close_reason_is_cut_to_123_bytes_never_inside_a_character() -> None:
    assert close_reason("short") == "short"
    cut = close_reason("unknown message type " + "é" * 100)
    assert len(cut.encode("utf-8")) <= 123
    assert cut.startswith("unknown message type é")
    assert close_reason("\U0001f600" * 40).encode("utf-8") == ("\U0001f600" * 30).encode("utf-8")
