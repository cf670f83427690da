"""Where a session's speech goes on from (engine/continuity.py): pure."""

from __future__ import annotations

from dataclasses import dataclass

from engine.continuity import CONTEXT_CHARS, Continuity
from engine.events import Caption, Speaker
from engine.store.base import PRESENTER_ID


def final(segment: int, text: str, end: float, *, lang: str = "en", **kw: object) -> Caption:
    return Caption(segment, lang, kw.pop("source", True), "final", text, end - 1, end, **kw)  # type: ignore[arg-type]


@dataclass
class Closed:
    """What the session reads of a closed stream's recogniser."""

    received_until: float
    language: str | None
    context: str


def test_a_new_session_starts_at_zero() -> None:
    continuity = Continuity()
    assert [continuity.next_segment() for _ in range(3)] == [0, 1, 2]
    assert continuity.audio_time == 0.0
    assert continuity.context(PRESENTER_ID, "en") == ""


def test_a_loaded_session_goes_on_from_its_finals() -> None:
    guest = Speaker("g1", "Ana")
    continuity = Continuity(
        [
            final(4, "Hello there.", 3.0),
            final(5, "Hola.", 5.0, lang="es", speaker=guest),
            final(6, "Bonjour.", 9.0, lang="fr", source=False),  # a translation: no prompt
            final(7, "Again.", 7.5),
        ]
    )
    assert continuity.next_segment() == 8
    assert continuity.audio_time == 9.0
    assert continuity.context(PRESENTER_ID, "en") == "Hello there. Again."
    assert continuity.context("g1", "es") == "Hola."
    assert continuity.context("g1", "en") == ""  # per language
    assert continuity.context(PRESENTER_ID, "fr") == ""


def test_context_keeps_only_the_recent_text() -> None:
    words = " ".join(f"word{i}" for i in range(CONTEXT_CHARS))
    continuity = Continuity([final(0, words, 1.0)])
    context = continuity.context(PRESENTER_ID, "en")
    assert len(context) == CONTEXT_CHARS and words.endswith(context)


def test_it_follows_what_other_processes_said() -> None:
    continuity = Continuity([final(0, "Mine.", 2.0, seq=1)])
    assert continuity.next_segment() == 1
    continuity.follow(
        [
            final(0, "Mine.", 2.0, seq=1),
            final(1, "Theirs.", 6.0, seq=5),
            final(4, "Hola.", 8.0, lang="es", seq=9, speaker=Speaker("g1", "Ana")),
        ]
    )
    assert continuity.next_segment() == 5 and continuity.audio_time == 8.0
    assert continuity.context(PRESENTER_ID, "en") == "Mine. Theirs."
    assert continuity.context("g1", "es") == "Hola."
    continuity.follow([final(0, "Stale.", 1.0, seq=1)])  # nothing newer: nothing moves back
    assert continuity.upcoming == 6 and continuity.audio_time == 8.0
    assert continuity.context(PRESENTER_ID, "en") == "Mine. Theirs."
    # A stream closed here keeps its recogniser's text over the shaped finals it published.
    continuity.stream_closed(PRESENTER_ID, Closed(12.0, "en", "Raw text. As decoded."))  # type: ignore[arg-type]
    continuity.follow([final(9, "raw text as decoded.", 11.8, seq=12)])
    assert continuity.context(PRESENTER_ID, "en") == "Raw text. As decoded."
    continuity.follow([final(10, "Said elsewhere later.", 15.0, seq=14)])  # another node's
    assert continuity.context(PRESENTER_ID, "en") == "Said elsewhere later."
    continuity.go_on_from(1_000)  # numbers claimed for this process
    continuity.go_on_from(10)  # never backwards
    assert [continuity.next_segment() for _ in range(2)] == [1_000, 1_001]


def test_a_closed_stream_moves_the_clock_and_the_prompt() -> None:
    continuity = Continuity([final(0, "Old.", 10.0)])
    continuity.stream_closed(PRESENTER_ID, Closed(4.0, "en", "New text."))  # type: ignore[arg-type]
    assert continuity.audio_time == 10.0  # never backwards
    assert continuity.context(PRESENTER_ID, "en") == "New text."
    continuity.stream_closed("g1", Closed(12.5, None, "ignored"))  # type: ignore[arg-type]
    assert continuity.audio_time == 12.5
    assert continuity.context("g1", "en") == ""
