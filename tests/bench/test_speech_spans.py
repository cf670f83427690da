"""The speech lag: silence after the last caption is not lag, speech not yet shown is."""

from __future__ import annotations

import itertools
import wave
from pathlib import Path

import pytest

from bench.speech_spans import speech_spans, unshown_speech

CLIP = Path(__file__).parents[1] / "data/eval/fleurs_st/audio/es/fleurs-es-002.wav"


def test_speech_spans_of_a_clip_with_silence_around_it() -> None:
    """A real clip with two seconds of silence added at each end: the spans lie inside the
    clip, and the silence belongs to none."""
    with wave.open(str(CLIP), "rb") as reader:
        rate = reader.getframerate()
        pcm = reader.readframes(reader.getnframes())
    silence = bytes(2 * 2 * rate)
    spans = speech_spans(silence + pcm + silence, rate)
    duration = len(pcm) / 2 / rate
    assert spans and spans[0][0] >= 2.0 and spans[-1][1] <= 2.0 + duration + 0.1
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    assert sum(end - start for start, end in spans) > duration / 2


@pytest.mark.parametrize(
    ("sent", "covered", "expected"),
    [
        (6.5, 5.0, 0.0),  # everything sent after the caption is silence
        (10.0, 5.0, 3.0),  # the speech from 7 s is not shown yet
        (10.0, 3.0, 7.0),  # speech from 3 s is not shown yet: the lag counts from there
        (10.0, 1.0, 8.0),  # covered inside silence: the lag counts from the next speech
        (7.5, 5.0, 0.5),  # the next speech began at 7 s
        (20.0, 12.0, 0.0),  # past the last speech
    ],
)
def test_unshown_speech_counts_from_the_oldest_speech_not_covered(
    sent: float, covered: float, expected: float
) -> None:
    spans = ((2.0, 5.0), (7.0, 11.0))
    assert unshown_speech(sent, covered, spans) == pytest.approx(expected)
