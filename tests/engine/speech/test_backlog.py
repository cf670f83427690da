"""The text queue (engine/speech/backlog.py): pieces in order, the overflow policy, skipping
to the newest final, and a correction replacing its line's unspoken pieces."""

from __future__ import annotations

from engine.events import Caption
from engine.speech.backlog import Backlog
from engine.speech.config import PaceConfig
from tests.engine.speech.test_speech import _final


def _texts(backlog: Backlog) -> list[tuple[int, int, str, bool]]:
    pieces = []
    while backlog:
        piece = backlog.take()
        pieces.append((piece.segment, piece.sentence, piece.text, piece.last))
    return pieces


def test_a_final_is_queued_as_pieces_numbered_by_sentence_its_last_marked() -> None:
    backlog = Backlog(PaceConfig())
    backlog.add(_final(0, "Hola a todos. Esto es una prueba."), 1, 48, 5.0)
    backlog.add(_final(1, "Adiós."), 0, 48, 6.0)
    assert len(backlog) == 3 and backlog.chars() == len("Hola a todos.Esto es una prueba.Adiós.")
    assert backlog.head.variant == 1 and backlog.head.queued == 5.0
    assert _texts(backlog) == [
        (0, 1, "Hola a todos.", False),
        (0, 2, "Esto es una prueba.", True),
        (1, 3, "Adiós.", True),
    ]


def test_beyond_max_pieces_the_oldest_are_dropped_and_counted_once() -> None:
    backlog = Backlog(PaceConfig(max_pieces=2))
    for segment in range(4):
        backlog.add(_final(segment, f"Frase {segment}."), 0, 48, 0.0)
    assert [p[0] for p in _texts(backlog)] == [2, 3]
    assert backlog.take_dropped() == 2
    assert backlog.take_dropped() == 0


def test_skipping_keeps_the_whole_newest_final() -> None:
    backlog = Backlog(PaceConfig())
    backlog.add(_final(0, "Uno."), 0, 48, 0.0)
    backlog.add(_final(1, "Dos. Tres."), 0, 48, 0.0)
    backlog.add(_final(2, "Cuatro. Cinco. Seis."), 0, 48, 0.0)
    backlog.skip_to_newest()
    assert [p[2] for p in _texts(backlog)] == ["Cuatro.", "Cinco.", "Seis."]
    assert backlog.take_dropped() == 3


def test_a_correction_replaces_its_line_in_place_until_a_piece_of_it_is_taken() -> None:
    backlog = Backlog(PaceConfig())
    for segment, text in enumerate(["Uno.", "Usamos equipo visor.", "Tres."]):
        backlog.add(_final(segment, text), 2, 48, float(segment))
    corrected = Caption(1, "es", False, "final", "Usamos TeamViewer. Sin duda.", 0, 1, rev=1)
    assert backlog.replace(corrected, 48)
    assert not backlog.replace(Caption(9, "es", False, "final", "Nada.", 0, 1, rev=1), 48)
    assert backlog.take().text == "Uno."
    piece = backlog.take()
    assert (piece.segment, piece.sentence, piece.text, piece.last) == (
        1,
        2,
        "Usamos TeamViewer.",
        False,
    )
    assert (piece.variant, piece.queued) == (2, 1.0)
    assert backlog.started(1) and not backlog.started(2)
    assert not backlog.replace(Caption(1, "es", False, "final", "Otra cosa.", 0, 1, rev=2), 48)
    assert [(p[2], p[3]) for p in _texts(backlog)] == [("Sin duda.", True), ("Tres.", True)]
