"""Metric functions of the captions benchmark on small hand-made cases (answers worked by hand)."""

from __future__ import annotations

import pytest

from bench.alignment import (
    TimedWord,
    WordErrors,
    matched_reference_indices,
    reference_word_times,
    split_timed_word,
    word_errors,
)
from bench.metrics import (
    CaptionUpdate,
    SendSchedule,
    causal_limit,
    distribution,
    erasure,
    final_words,
    first_match_times,
    percentile,
    retracted_words,
    transcript_snapshots,
    word_latencies,
)
from bench.textnorm import normalise

# --- normalisation -------------------------------------------------------------------------


def test_normalise_case_punctuation_and_fillers() -> None:
    text = "We are gathered to review, the uh, results. Um, last year we were-"
    assert normalise(text) == "we are gathered to review the results last year we were"


def test_numbers_match_however_they_are_written() -> None:
    """Whisper's English normaliser: spelled and written numbers score the same."""
    assert normalise("In 2021, revenue reached almost 64 billion") == normalise(
        "In twenty twenty one, revenue reached almost sixty four billion"
    )
    assert normalise("627,000") == normalise("six hundred twenty seven thousand") == "627000"
    assert normalise("105%") == normalise("105 percent")


def test_typographic_apostrophes_score_as_plain_ones() -> None:
    assert normalise("thy beauty’s field, thy youth’s proud livery") == normalise(
        "thy beauty's field, thy youth's proud livery"
    )
    assert normalise("  Hmm…   mm   world\n\tends — here  ") == "world ends here"


def test_other_languages_get_the_basic_normaliser() -> None:
    assert normalise("¿Qué tal? Está bien.", "es") == "qué tal está bien"
    assert normalise("C'est l'été !", "fr") == "c est l été"


# --- WER and alignment ---------------------------------------------------------------------


def test_word_errors_substitution_and_deletion() -> None:
    errors = word_errors("the cat sat on the mat".split(), "the cat sit on mat".split())
    assert errors == WordErrors(substitutions=1, deletions=1, insertions=0, hits=4)
    assert errors.wer == pytest.approx(2 / 6)


def test_word_errors_insertion_and_empty_sides() -> None:
    assert word_errors(["a", "cat"], ["a", "big", "cat"]).wer == pytest.approx(0.5)
    assert word_errors(["a", "b"], []) == WordErrors(0, 2, 0, 0)
    assert word_errors([], ["a"]) == WordErrors(0, 0, 1, 0)


def test_overall_wer_is_total_errors_over_total_words() -> None:
    first = word_errors(["a", "b"], ["a", "x"])  # 1 error / 2 words
    second = word_errors(["c", "d", "e", "f"], ["c", "d", "e", "f"])  # 0 / 4
    total = first + second
    assert total.errors == 1 and total.reference_words == 6
    assert total.wer == pytest.approx(1 / 6)


def test_matched_reference_indices_only_equal_pairs() -> None:
    assert matched_reference_indices(["a", "b", "c", "d"], ["a", "x", "c"]) == {0, 2}
    assert matched_reference_indices(["a", "b"], []) == frozenset()


def test_reference_word_times_pairs_and_interpolates() -> None:
    decoded = [TimedWord("a", 1.0, 1.5), TimedWord("bee", 1.5, 1.8), TimedWord("c", 2.0, 2.5)]
    times = reference_word_times(["x", "y", "a", "b", "c", "d", "e"], decoded, duration=4.0)
    spans = [(w.text, w.start, w.end) for w in times]
    assert spans == [
        ("x", 0.0, 0.5),  # leading gap 0..1.0 shared by two words
        ("y", 0.5, 1.0),
        ("a", 1.0, 1.5),
        ("b", 1.5, 1.8),  # substituted by "bee": takes its span
        ("c", 2.0, 2.5),
        ("d", 2.5, 3.25),  # trailing gap 2.5..4.0 shared by two words
        ("e", 3.25, 4.0),
    ]


def test_split_timed_word_spreads_span() -> None:
    parts = split_timed_word(TimedWord("2021", 1.0, 2.0), "two thousand twenty one".split())
    assert [(p.text, p.start, p.end) for p in parts] == [
        ("two", 1.0, 1.25),
        ("thousand", 1.25, 1.5),
        ("twenty", 1.5, 1.75),
        ("one", 1.75, 2.0),
    ]
    assert split_timed_word(TimedWord("um", 0.0, 1.0), []) == []


# --- displayed transcript, first-shown times ---------------------------------------------

UPDATES = [
    CaptionUpdate(1.0, 0, "draft", "Hello wor"),
    CaptionUpdate(1.5, 0, "draft", "Hello world how"),
    CaptionUpdate(2.0, 0, "final", "Hello world."),
    CaptionUpdate(2.2, 1, "draft", "How are"),
    CaptionUpdate(2.5, 0, "draft", "ignored after the final"),
    CaptionUpdate(3.0, 1, "final", "How are you?"),
]


def test_transcript_snapshots_display_final_else_newest_draft() -> None:
    snapshots = transcript_snapshots(UPDATES)
    assert [(s.arrival, " ".join(s.displayed), " ".join(s.finals)) for s in snapshots] == [
        (1.0, "hello wor", ""),
        (1.5, "hello world how", ""),
        (2.0, "hello world", "hello world"),
        (2.2, "hello world how are", "hello world"),
        (3.0, "hello world how are you", "hello world how are you"),
    ]


def test_transcript_snapshots_order_by_segment_not_arrival() -> None:
    updates = [CaptionUpdate(1.0, 1, "draft", "beta"), CaptionUpdate(1.1, 0, "draft", "alpha")]
    assert transcript_snapshots(updates)[-1].displayed == ("alpha", "beta")


def test_final_words() -> None:
    assert final_words(UPDATES) == ["hello", "world", "how", "are", "you"]


def test_first_match_times_records_first_equal_match() -> None:
    reference = ["one", "two", "three"]
    observations = [
        (1.0, ["one"], 3),
        (2.0, ["one", "too"], 3),  # "too" is a substitution: not shown yet
        (3.0, ["one", "two", "three"], 3),
        (4.0, ["one", "two", "tree"], 3),  # a later retraction does not undo "shown"
    ]
    assert first_match_times(reference, observations) == (1.0, 3.0, 3.0)


def test_first_match_times_causal_limit_prevents_matching_unspoken_words() -> None:
    reference = ["a", "b", "c", "d", "x", "e"]
    early = [(1.0, ["a", "b", "x"], 6)]
    # Without a limit the alignment pairs the misheard "x" with the reference "x" not yet spoken.
    assert first_match_times(reference, early)[4] == 1.0
    limited = [(1.0, ["a", "b", "x"], 3), (5.0, ["a", "b", "c", "d", "x"], 6)]
    assert first_match_times(reference, limited) == (1.0, 1.0, 5.0, 5.0, 5.0, None)


def test_causal_limit_counts_words_starting_before_bound() -> None:
    words = [TimedWord("a", 0.0, 0.4), TimedWord("b", 0.5, 0.9), TimedWord("c", 2.0, 2.4)]
    assert causal_limit(words, audio_seconds=0.2, slack=0.0) == 1
    assert causal_limit(words, audio_seconds=0.2, slack=1.0) == 2
    assert causal_limit(words, audio_seconds=1.0, slack=1.0) == 2  # 2.0 is not before 2.0
    assert causal_limit(words, audio_seconds=1.5, slack=1.0) == 3


# --- send schedule and latency -------------------------------------------------------------

SCHEDULE = SendSchedule(
    sample_rate=16000,
    chunk_end_samples=tuple(1600 * (k + 1) for k in range(10)),
    send_times=(100.0, 100.1, 100.2, 100.3, 100.4, 100.5, 100.6, 100.7, 100.8, 100.9),
)


def test_send_schedule_maps_audio_time_to_send_time() -> None:
    assert SCHEDULE.send_time_of(0.05) == 100.0
    assert SCHEDULE.send_time_of(0.0999) == 100.0
    assert SCHEDULE.send_time_of(0.25) == 100.2  # sample 4000 is in the chunk [3200, 4800)
    assert SCHEDULE.send_time_of(0.5) == 100.5  # sample 8000 starts chunk 5
    assert SCHEDULE.send_time_of(7.0) == 100.9  # past the end: the last chunk
    assert SCHEDULE.audio_sent_by(99.0) == 0.0
    assert SCHEDULE.audio_sent_by(100.05) == 0.1
    assert SCHEDULE.audio_sent_by(100.95) == 1.0
    assert SCHEDULE.audio_seconds == 1.0


def test_word_latencies_draft_and_final() -> None:
    reference = (
        TimedWord("hello", 0.0, 0.25),  # end sample 4000, sent at 100.2
        TimedWord("world", 0.3, 0.5),  # end sample 8000, sent at 100.5
        TimedWord("again", 0.6, 0.75),  # never recognised
    )
    updates = [
        CaptionUpdate(100.5, 0, "draft", "Hello"),
        CaptionUpdate(100.8, 0, "draft", "Hello world"),
        CaptionUpdate(101.2, 0, "final", "Hello, world!"),
    ]
    latencies = word_latencies(reference, updates, SCHEDULE)
    assert latencies.shown == pytest.approx((0.3, 0.3, None))
    assert latencies.final == pytest.approx((1.0, 0.7, None))
    assert (latencies.never_shown, latencies.never_final) == (1, 1)


# --- erasure ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("previous", "new", "retracted"),
    [
        ("a b c", "a x", 2),
        ("a b", "a b c", 0),
        ("", "a", 0),
        ("a", "", 1),
        ("a b c", "x b c", 3),
    ],
)
def test_retracted_words(previous: str, new: str, retracted: int) -> None:
    assert retracted_words(previous.split(), new.split()) == retracted


def test_erasure_normalised_by_final_words() -> None:
    # Segment 0: "hello wor" -> "hello world how" retracts "wor" (1); -> final "hello world"
    # retracts "how" (1); the draft after the final is ignored. Segment 1: "how are" -> "how
    # are you" retracts nothing. 2 retracted / 5 final words.
    result = erasure(UPDATES)
    assert (result.retracted_words, result.final_words) == (2, 5)
    assert result.normalised == pytest.approx(0.4)


def test_erasure_ignores_punctuation_and_case_changes() -> None:
    updates = [
        CaptionUpdate(1.0, 0, "draft", "hello world"),
        CaptionUpdate(2.0, 0, "final", "Hello, world."),
    ]
    assert erasure(updates).retracted_words == 0


# --- summary statistics ----------------------------------------------------------------------


def test_percentile_linear_interpolation() -> None:
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)  # 3 + 0.85 * (4 - 3)
    assert percentile([5.0], 95) == 5.0


def test_distribution_skips_missing_values() -> None:
    summary = distribution([1.0, None, 3.0])
    assert (summary.count, summary.p50, summary.mean, summary.min, summary.max) == (
        2,
        2.0,
        2.0,
        1.0,
        3.0,
    )
    assert distribution([None]).p50 is None
