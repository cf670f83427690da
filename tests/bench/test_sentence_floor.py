"""The whole-sentence floor bench's pure parts (bench/sentence_floor.py)."""

from __future__ import annotations

import pytest

from bench.sentence_floor import ClipSpeech, between_clips, floor_laal


def clip(lang: str, duration: float, spans: tuple[tuple[float, float], ...]) -> ClipSpeech:
    return ClipSpeech(f"{lang}-{duration}", lang, duration, spans, reference_words=4)


def test_a_translation_before_the_clip_ends_lags_about_half_the_clip_less() -> None:
    speech = clip("de", 10.0, ((1.0, 4.0), (4.8, 9.0)))
    assert speech.pauses == pytest.approx([0.8])
    assert (speech.lead, speech.tail) == pytest.approx((1.0, 1.0))
    # Emitted at the speech end (9 s), inside the clip: every word counts, less the rate.
    (at_end,) = floor_laal([speech], 0.0)
    assert at_end == pytest.approx(9.0 - 2.5 * 1.5)
    # Emitted after the clip's audio ended: the first word's whole delay.
    (late,) = floor_laal([speech], 2.0)
    assert late == pytest.approx(11.0)


def test_silence_between_clips_counts_tail_gap_and_lead_within_one_language() -> None:
    a = clip("de", 5.0, ((0.5, 4.0),))
    b = clip("de", 6.0, ((0.7, 5.0),))
    c = clip("fr", 6.0, ((0.2, 5.0),))
    assert between_clips([a, b, c], gap_s=1.0) == pytest.approx([1.0 + 1.0 + 0.7])
