"""The traveller bench's turn timing (bench/talk.py) with sentence finals."""

from __future__ import annotations

from typing import Any

from bench.talk import Phone, speaking_at, turn_times


def _final(segment: int, lang: str, sources: list[int] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": "caption",
        "state": "final",
        "text": "said",
        "segment": segment,
        "lang": lang,
        "source": False,
    }
    if sources is not None:
        event["sources"] = sources
    return event


def test_a_sentence_final_covers_every_segment_it_was_made_from() -> None:
    """The turn's three source segments became two sentence finals; the second covers 5 and
    6 and carries 5's number, as its audio does. Counting finals against segments, as the
    bench did before sentence finals, never saw the turn complete."""
    phone = Phone()
    phone.finals = [
        (10.0, _final(4, "en", [4])),
        (11.0, _final(4, "es", [4])),  # another language: not this turn's listener
        (12.5, _final(5, "en", [5, 6])),
        (13.0, _final(3, "en")),  # an earlier turn's, without sources
    ]
    phone.audio = [
        (10.2, {"segment": 4, "lang": "en"}),
        (12.9, {"segment": 5, "lang": "en"}),
        (13.1, {"segment": 5, "lang": "en"}),
    ]
    assert turn_times(phone, {4, 5, 6}, "en") == (12.5, 12.9)


def test_a_turn_not_wholly_translated_has_no_time_yet() -> None:
    phone = Phone()
    phone.finals = [(10.0, _final(4, "en", [4]))]
    phone.audio = [(10.2, {"segment": 4, "lang": "en"})]
    assert turn_times(phone, {4, 5}, "en") == (None, None)
    assert turn_times(phone, {7}, "en") == (None, None)


def test_the_voice_already_speaking_a_turn_is_told_apart() -> None:
    """The turn's first sentence (segment 4) was spoken before the speaker stopped at 11.0;
    its last one (5 and 6) waited for it. A turn none of whose audio came before its end
    was not being spoken."""
    phone = Phone()
    phone.finals = [(10.0, _final(4, "en", [4])), (11.5, _final(5, "en", [5, 6]))]
    phone.audio = [(10.2, {"segment": 4, "lang": "en"}), (15.0, {"segment": 5, "lang": "en"})]
    assert speaking_at(phone, {4, 5, 6}, "en", 11.0)
    assert turn_times(phone, {4, 5, 6}, "en") == (11.5, 15.0)
    assert not speaking_at(phone, {5, 6}, "en", 11.0)
    assert not speaking_at(phone, {4, 5, 6}, "en", 10.1)
