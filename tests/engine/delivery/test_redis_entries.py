"""The Redis stream entry codec, without Redis: what the hub sends, what the emit script
makes of it, and what a reader decodes."""

from __future__ import annotations

from engine.delivery.redis_entries import decode_entry, entry_body, stream_items
from engine.events import Caption, Event, SpeechAudio, StateChange, with_seq


def as_stored(event: Event, seq: int, ts: float) -> bytes:
    """The ``e`` field as the emit script writes it: ``seq`` and ``ts`` prepended."""
    return ('{"seq":' + str(seq) + ',"ts":' + repr(ts) + "," + entry_body(event)).encode()


def test_an_entry_decodes_to_the_numbered_event() -> None:
    for event in (
        Caption(3, "es", False, "final", "¿qué?", 1.0, 2.5),
        StateChange("live", 2, (("en", 1), ("es", 1))),
    ):
        assert decode_entry({b"e": as_stored(event, 7, 12.5), b"n": b"A"}) == with_seq(
            event, 7, 12.5
        )


def test_speech_audio_takes_its_pcm_from_its_own_field() -> None:
    pcm = bytes(range(256))
    event = SpeechAudio(0, "es", 22050, pcm, text="hola")
    assert '"pcm"' not in entry_body(event)
    decoded = decode_entry({b"e": as_stored(event, 2, 1.0), b"pcm": pcm})
    assert isinstance(decoded, SpeechAudio) and decoded.pcm == pcm and decoded.seq == 2


def test_xread_replies_of_both_protocols_read_alike() -> None:
    entries = [(b"1-0", {b"e": b"{}"})]
    resp2 = [[b"interp:s:{ABC234}:events", entries]]
    resp3 = {b"interp:s:{ABC234}:events": [entries]}
    expected = [(b"interp:s:{ABC234}:events", entries)]
    assert list(stream_items(resp2)) == expected == list(stream_items(resp3))
    assert list(stream_items(None)) == [] == list(stream_items({}))
