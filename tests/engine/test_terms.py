"""The term list (engine/terms.py) and revision bookkeeping (engine/revisions.py): pure."""

from __future__ import annotations

import pytest

from engine.events import Caption, TermsChanged, from_dict, to_dict
from engine.revisions import RevisionBook, changed_words
from engine.terms import (
    MAX_TERMS,
    Term,
    TermError,
    dumps,
    glossary_with,
    loads,
    parse_pasted,
    parse_terms,
    recognition_hint,
    terms_json,
    with_term,
)


def test_terms_parse_from_strings_and_objects() -> None:
    terms = parse_terms(
        ["TeamViewer", {"text": " churn ", "translations": {"ES": "bajas"}}, "teamviewer"]
    )
    assert terms == (Term("TeamViewer"), Term.of("churn", {"es": "bajas"}))
    assert terms_json(terms) == ["TeamViewer", {"text": "churn", "translations": {"es": "bajas"}}]
    assert loads(dumps(terms)) == terms
    assert loads(None) == ()


@pytest.mark.parametrize(
    "bad",
    [
        "TeamViewer",
        [3],
        [""],
        ["x" * 101],
        [{"text": "a", "translations": {"xx-nope": "b"}}],
        [{"text": "a", "translations": ["es"]}],
        [{"text": "a", "colour": "red"}],
        ["t"] * (MAX_TERMS + 1),
    ],
)
def test_malformed_term_lists_are_refused_with_a_reason(bad: object) -> None:
    with pytest.raises(TermError) as refused:
        parse_terms(bad)
    assert str(refused.value)


def test_a_pasted_list_one_a_line_or_comma_separated_with_translations() -> None:
    pasted = "TeamViewer, Zoom\n\nchurn = es: bajas, fr: attrition\n EBITDA ; 2021 \n"
    assert parse_pasted(pasted) == (
        Term("TeamViewer"),
        Term("Zoom"),
        Term.of("churn", {"es": "bajas", "fr": "attrition"}),
        Term("EBITDA"),
        Term("2021"),
    )


def test_term_translations_join_the_glossary_and_win() -> None:
    glossary = {"es": {"Churn": "rotación", "winter": "invierno"}}
    merged = glossary_with(glossary, [Term.of("churn", {"es": "bajas", "fr": "attrition"})])
    assert merged == {
        "es": {"winter": "invierno", "churn": "bajas"},
        "fr": {"churn": "attrition"},
    }
    assert glossary == {"es": {"Churn": "rotación", "winter": "invierno"}}  # not changed


def test_the_hint_keeps_whole_terms_within_its_budget() -> None:
    terms = [Term("TeamViewer"), Term("x" * 30), Term("churn")]
    assert recognition_hint(terms) == f"TeamViewer, {'x' * 30}, churn."
    assert recognition_hint(terms, budget=20) == "TeamViewer, churn."
    assert recognition_hint([]) == ""


def test_adding_a_term_merges_or_appends() -> None:
    terms = (Term("Zoom"),)
    assert with_term(terms, Term("zoom")) == terms
    assert with_term(terms, Term("Euros")) == (Term("Zoom"), Term("Euros"))


def test_terms_event_round_trips() -> None:
    event = TermsChanged((Term("Zoom"), Term.of("churn", {"es": "bajas"})), seq=4, ts=1.5)
    wire = to_dict(event)
    assert wire["terms"] == ["Zoom", {"text": "churn", "translations": {"es": "bajas"}}]
    assert from_dict(wire) == event


def final(segment: int, lang: str, text: str, seq: int, **kw: object) -> Caption:
    return Caption(segment, lang, lang == "en", "final", text, 0.0, 1.0, seq=seq, **kw)  # type: ignore[arg-type]


def test_the_newest_revision_wins_and_a_correction_remakes_its_sentences() -> None:
    book = RevisionBook(
        [
            final(0, "en", "Welcome to team", 1),
            final(1, "en", "viewer.", 2),
            final(0, "es", "Bienvenido al equipo visor.", 3, sources=(0, 1)),
            final(0, "fr", "Bienvenue.", 4, sources=(0, 1)),
            final(2, "en", "Next.", 5),
            final(2, "es", "Siguiente.", 6, sources=(2,)),
            final(1, "en", "Viewer.", 7, rev=1),
            final(0, "es", "Bienvenido, visor.", 8, sources=(0, 1), rev=1),
        ]
    )
    source = book.source(1)
    assert source is not None and (source.text, source.rev) == ("Viewer.", 1)
    assert book.source(9) is None
    fix = final(1, "en", "TeamViewer.", 9, rev=2)
    remakes = {r.line.lang: r for r in book.remakes(fix)}
    assert set(remakes) == {"es", "fr"}
    assert remakes["es"].line.rev == 1 and remakes["es"].rev == 2
    assert remakes["fr"].rev == 1
    assert remakes["es"].source_text == "Welcome to team TeamViewer."
    # Of equal revisions, the later seq wins (two nodes at once: the last write).
    book.add(final(1, "en", "Team Viewer.", 10, rev=1))
    assert book.source(1).text == "Team Viewer."  # type: ignore[union-attr]
    book.add(final(1, "en", "Teamviewer.", 6, rev=1))
    assert book.source(1).text == "Team Viewer."  # type: ignore[union-attr]
    # A higher revision wins whatever its seq.
    book.add(final(1, "en", "TeamViewer.", 9, rev=2))
    assert book.source(1).text == "TeamViewer."  # type: ignore[union-attr]


def test_changed_words_are_what_a_correction_taught() -> None:
    assert changed_words("we use team viewer daily", "we use TeamViewer daily") == ["TeamViewer"]
    assert changed_words("six hundred", "627,000 units") == ["627", "000", "units"]
    assert changed_words("same", "same") == []
