"""How a final is cut into pieces: a short lead, then pieces that grow, then clauses."""

from __future__ import annotations

from engine.speech.pieces import speech_pieces

LONG = (
    "Todos los sustantivos junto con la palabra Sie para usted siempre empiezan con una "
    "letra mayúscula incluso en medio de una oración porque así lo quiere la gramática."
)


def test_a_short_lead_is_followed_by_pieces_that_double_until_clause_length() -> None:
    [pieces] = speech_pieces(LONG, clause_chars=80, lead_chars=16)
    assert " ".join(pieces) == LONG
    lengths = [len(p) for p in pieces]
    assert lengths[0] <= 16
    assert lengths[1] <= 32 and lengths[2] <= 64
    assert lengths[0] < lengths[1] < lengths[2], lengths
    # Every cut is at a word boundary: no piece starts or ends inside a word.
    words = LONG.split()
    assert [w for p in pieces for w in p.split()] == words


def test_a_lead_cut_prefers_a_nearby_clause_end() -> None:
    text = "Buenos días a todos, hoy hablaremos de la historia de la ciudad y de su gente."
    [pieces] = speech_pieces(text, lead_chars=16)
    assert pieces[0] == "Buenos días a todos,"


def test_a_long_lead_cuts_once_as_before_and_later_sentences_get_no_lead() -> None:
    text = "The quick brown fox jumps over the lazy dog and runs into the wood. " + LONG
    first, second = speech_pieces(text, clause_chars=80, lead_chars=48)
    assert len(first) == 2 and len(first[0]) <= 48
    assert second == [LONG]  # no lead, and no clause to cut at


def test_short_text_is_never_cut() -> None:
    assert speech_pieces("Hola a todos.", lead_chars=16) == [["Hola a todos."]]
    # A cut that would leave a scrap of a word or two alone is not made.
    assert speech_pieces("Muchas gracias a todos.", lead_chars=16) == [["Muchas gracias a todos."]]
    assert speech_pieces("Muchas gracias a todos ustedes.", lead_chars=16) == [
        ["Muchas gracias", "a todos ustedes."]
    ]
