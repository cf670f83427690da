"""Spurious sentence breaks against a punctuated reference (bench/sentence_breaks.py)."""

from __future__ import annotations

from bench.sentence_breaks import SentenceBreaks, marked_words, sentence_breaks
from bench.sentence_ends import end_rates

REFERENCE = "In the previous year, sales grew. Furthermore, our financial profile remains strong."


def test_words_are_marked_with_the_sentence_they_end() -> None:
    words = marked_words("Sales grew. Did they? Yes! “Quoted.” Trailing …")
    assert [w.word for w in words] == ["sales", "grew", "did", "they", "yes", "quoted", "trailing"]
    assert [w.ends_sentence for w in words] == [False, True, False, True, True, True, True]


def test_a_pause_turned_into_a_full_stop_is_spurious() -> None:
    live = "In the previous. Here, sales grew. Further. More of financial profile remains strong."
    counted = sentence_breaks(REFERENCE, live)
    assert counted == SentenceBreaks(
        reference_words=12, reference_breaks=2, hypothesis_breaks=4, spurious=2
    )
    assert counted.per_100_words == 100 * 2 / 12


def test_real_sentence_ends_are_not_spurious_even_a_word_off() -> None:
    assert sentence_breaks(REFERENCE, REFERENCE).spurious == 0
    shifted = "In the previous year, sales grew furthermore. Our financial profile remains strong."
    assert sentence_breaks(REFERENCE, shifted).spurious == 0  # one word late: same break
    assert sentence_breaks(REFERENCE, "in the previous year sales grew").spurious == 0


def test_counts_add_up_over_recordings() -> None:
    one = sentence_breaks(REFERENCE, "In the previous. Year sales grew.")
    assert (one + one).spurious == 2 * one.spurious
    assert (one + one).reference_words == 2 * one.reference_words


def test_end_rates_count_each_word_and_the_sentences_it_ends() -> None:
    seen, ending = end_rates(["Come in. We work in Paris.", "They live in it; it ends in June."])
    assert (seen["in"], ending["in"]) == (4, 1)
    assert (seen["it"], ending["it"]) == (2, 0)
    assert (seen["june"], ending["june"]) == (1, 1)
