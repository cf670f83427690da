"""``python -m bench speech``: the listener analysis on a hand-made log (the server run is
covered by the speech flow tests; this is the arithmetic of its lag figures)."""

from __future__ import annotations

from typing import Any

from bench.speech import ListenerLog, analyse, goals

RATE = 24000


def chunk(at: float, segment: int, seconds: float) -> tuple[float, dict[str, Any], int]:
    header = {"segment": segment, "sample_rate": RATE, "voice": "natural"}
    return (at, header, int(seconds * RATE) * 2)


def test_a_sentence_final_is_timed_from_its_sentence_end_and_its_audio_is_no_wait() -> None:
    # Segment 3 opens a sentence spanning source segments 3-4: its source caption ends at
    # 2 s, its translation final (the whole sentence) at 9 s. Replay started at t=100.
    log = ListenerLog("es", finals={3: 110.0}, caption_end={3: 2.0}, final_end={3: 9.0})
    log.chunks += [chunk(110.5, 3, 4.0), chunk(111.0, 3, 6.0)]  # 10 s of speech
    result = analyse(log, replay_start=100.0, bound_s=6.0)
    # Played from 110.5 to 120.5: lag behind the sentence's end (109), not the segment's (102).
    assert [lag for _, lag in result["lag_series"]] == [5.5, 11.5]
    assert result["speech_stage_lag_s"]["max"] == 10.5
    # The stage only waited the half second before the first chunk.
    assert result["speech_stage_wait_s"]["max"] == 0.5


def test_a_final_that_waits_for_the_sentence_before_it_counts_that_wait() -> None:
    log = ListenerLog("es", finals={1: 10.0, 2: 12.0}, final_end={1: 0.0, 2: 0.0})
    log.chunks += [chunk(10.2, 1, 9.0), chunk(12.1, 2, 2.0)]
    result = analyse(log, replay_start=0.0, bound_s=6.0)
    # Segment 2's chunk starts when segment 1's ends (19.2) and ends at 21.2: 7.2 s of wait.
    assert result["speech_stage_wait_s"]["max"] == 7.2
    report = {"server": [{"source": "en", "listeners": [result]}]}
    bounded = goals(report)["lag bounded over the replay (en->es)"]
    assert bounded["met"] is True  # 7.2 <= 6 + 8, and the lag does not grow
    result["speech_stage_wait_s"]["max"] = 14.5
    assert goals(report)["lag bounded over the replay (en->es)"]["met"] is False


def test_without_a_translation_final_the_source_caption_end_is_used() -> None:
    log = ListenerLog("es", finals={}, caption_end={5: 1.0})
    log.chunks.append(chunk(3.0, 5, 1.0))
    result = analyse(log, replay_start=0.0, bound_s=6.0)
    assert result["lag_series"] == [[3.0, 3.0]]
    assert result["speech_stage_wait_s"]["count"] == 0


def test_a_chunk_arriving_after_its_final_has_played_out_is_a_silence_inside_it() -> None:
    log = ListenerLog("es", finals={1: 10.0, 2: 20.0}, final_end={1: 0.0, 2: 0.0})
    # Segment 1: 2 s of audio from 10.0, the next piece arrives at 12.5 (0.5 s of silence),
    # the last one while the one before still plays. Segment 2's first chunk starts a new
    # final: a pause between finals is not a silence inside one.
    log.chunks += [chunk(10.0, 1, 2.0), chunk(12.5, 1, 1.0), chunk(13.0, 1, 1.0)]
    log.chunks.append(chunk(20.0, 2, 1.0))
    result = analyse(log, replay_start=0.0, bound_s=6.0)
    assert result["silences_in_final_s"]["count"] == 1
    assert result["silence_in_final_total_s"] == 0.5
