"""SpeechTimeline: where pauses fall in the VAD's output (pure bookkeeping, no model)."""

from __future__ import annotations

import numpy as np

from engine.recognition.vad import WINDOW_SECONDS, NextSpeech, SpeechTimeline


def track(pattern: str) -> SpeechTimeline:
    """One character per 32 ms window: ``#`` speech, ``.`` silence."""
    speech = SpeechTimeline(0.0)
    speech.extend(np.array([1.0 if c == "#" else 0.0 for c in pattern], dtype=np.float32))
    return speech


def at(windows: int) -> float:
    return windows * WINDOW_SECONDS


def test_first_pause_is_the_first_silence_long_enough() -> None:
    speech = track("..####..######.........##")
    assert speech.first_pause(0.0, at(2)) == at(6)
    assert speech.first_pause(0.0, at(3)) == at(14)
    assert speech.first_pause(0.0, at(10)) is None
    assert speech.first_pause(at(7), at(2)) == at(14)


def test_the_open_gap_after_the_last_speech_counts() -> None:
    speech = track("####....")
    assert speech.first_pause(0.0, at(4)) == at(4)
    assert speech.first_pause(0.0, at(5)) is None


def test_a_pause_after_too_little_speech_must_be_long() -> None:
    # 4 windows of speech, a 3-window pause, 6 more windows, a 3-window pause, then 12.
    speech = track("####...######...############............")
    assert speech.first_pause(0.0, at(3)) == at(4)
    # Needing 8 windows of speech first, the first pause is too early...
    assert speech.first_pause(0.0, at(3), min_speech=at(8)) == at(13)
    # ...unless it is long enough on its own.
    assert speech.first_pause(0.0, at(3), min_speech=at(8), long_silence=at(3)) == at(4)
    # Speech counts from the first speech window at or after the start, pauses included.
    assert speech.first_pause(0.0, at(3), min_speech=at(20)) == at(28)
    assert speech.first_pause(0.0, at(3), min_speech=at(40)) is None
    assert speech.first_pause(0.0, at(3), min_speech=at(40), long_silence=at(12)) == at(28)


def test_the_next_speech_after_a_final_is_where_its_segment_would_begin() -> None:
    speech = track("####..........####")
    # Speech came back 10 windows after the final's end: its segment begins a lead-in of
    # 2 windows before it.
    assert speech.next_speech(at(4), at(2)) == NextSpeech(at(12), heard=True)
    # Before it came (only the first 10 windows scored), it cannot begin before the lead-in
    # before what was scored last.
    early = track("####......")
    assert early.next_speech(at(4), at(2)) == NextSpeech(at(8), heard=False)
    # Never before the final's end, however short the pause.
    assert track("####.####").next_speech(at(4), at(2)) == NextSpeech(at(4), heard=True)


def test_speech_trimmed_away_after_a_final_still_counts_as_the_speaker_going_on() -> None:
    speech = track("####....####......")
    speech.trim_before(at(13))  # the segment after the final closed and its audio went
    assert speech.next_speech(at(4), at(2)) == NextSpeech(at(4), heard=True)
    # Silence trimmed away is still silence: what follows is measured from the final.
    quiet = track("####..............")
    quiet.trim_before(at(13))
    assert quiet.next_speech(at(4), at(2)) == NextSpeech(at(16), heard=False)


def test_speech_once_begun_holds_down_to_the_hold_below_the_threshold() -> None:
    probs = [0.1, 0.4, 0.6, 0.4, 0.4, 0.2, 0.4, 0.45]
    plain = SpeechTimeline(0.0)
    plain.extend(np.array(probs, dtype=np.float32))
    # Alone, only the window over the threshold is speech.
    assert plain.speech_span(0.0) == (at(2), at(3))
    held = SpeechTimeline(0.0, threshold=0.5, hold=0.15)
    # Given in two calls: the state carries from one to the next.
    held.extend(np.array(probs[:4], dtype=np.float32))
    held.extend(np.array(probs[4:], dtype=np.float32))
    # 0.4 before any speech begins nothing; after it, 0.4 holds it until 0.2 ends it, and a
    # later 0.4 or 0.45 does not begin it again.
    assert held.speech_span(0.0) == (at(2), at(5))
    assert held.first_pause(0.0, at(3)) == at(5)
    assert held.silence_after(at(5)) == at(3)
