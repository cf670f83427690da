"""The term bench's rule (bench/term_rule.py): which words are terms, and recall."""

from __future__ import annotations

from bench.term_rule import reference_terms, term_recall, unique
from tests.data import SONNET, reference


def test_names_and_numbers_not_words_that_begin_a_sentence_line_or_quote() -> None:
    text = (
        "We are on Zoom. I hope, I'm sure, that TeamViewer and iPhone grew 627,000 units\n"
        "In 2021 in Paris; ’This fair child’ said Anne."
    )
    assert reference_terms(text) == [
        "Zoom",
        "TeamViewer",
        "iPhone",
        "627,000",
        "2021",
        "Paris",
        "Anne",
    ]
    assert unique(["Zoom", "2021", "Zoom"]) == ["Zoom", "2021"]


def test_a_reference_holds_all_its_terms_and_recall_counts_occurrences() -> None:
    sonnet = reference(SONNET)
    terms = reference_terms(sonnet)
    assert terms == ["2"]  # verse: every line begins with a capital
    assert term_recall(terms, sonnet).recall == 1.0
    recall = term_recall(
        ["Zoom", "Zoom", "Euros", "1", "TeamViewer"], "zoom, euros. One. team viewer"
    )
    assert (recall.found, recall.total) == (3, 5)
    assert recall.missed == ("Zoom", "TeamViewer")
