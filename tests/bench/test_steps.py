"""The compute-unaware replay: its settings parser, and (with the real tiny.en and Silero
models) that it dates every caption in audio time."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from bench.recordings import load_recording
from bench.steps import SAMPLE_RATE, TimedTranscriber, config_with, step_through
from engine.audio import Samples
from engine.events import Word
from engine.recognition.asr import Decoded, DecodeOptions
from engine.workers import WorkerPool
from models.catalog import resolve_whisper, silero_vad_path
from models.silero import SileroModel
from models.whisper import FasterWhisperTranscriber
from tests.data import SONNET


def test_overrides_are_typed_like_the_field() -> None:
    config = config_with(["min_silence_s=0.3", "refine=false", "refine_beam=3"])
    assert config.min_silence_s == 0.3 and config.refine is False and config.refine_beam == 3


def test_unknown_field_is_refused() -> None:
    with pytest.raises(SystemExit, match="no_such"):
        config_with(["no_such=1"])


class Echo:
    name = "echo"
    multilingual = False

    def transcribe(self, audio: Samples, options: DecodeOptions) -> Decoded:
        return Decoded((Word(" hi", 0.0, 0.1),))


def test_final_decodes_are_timed_apart_by_window_and_context() -> None:
    timed = TimedTranscriber(Echo())
    for options in (
        DecodeOptions(full_window=True, prefix="before", beam_size=5),
        DecodeOptions(full_window=True, beam_size=5),
        DecodeOptions(full_window=True, beam_size=5),
        DecodeOptions(prefix="before", beam_size=5),  # a shed final's decode
        DecodeOptions(prefix="before", word_timestamps=False),  # a draft: not a final's
    ):
        decoded = timed.transcribe(np.zeros(160, np.float32), options)
        assert decoded.words == (Word(" hi", 0.0, 0.1),)
    counts = {key: len(times) for key, times in timed.finals.items()}
    assert counts == {(True, True): 1, (True, False): 2, (False, True): 1, (False, False): 0}
    report = timed.report()
    assert "full window with context 1," in report and "full window without 2," in report
    assert "short window with context 1," in report and "short window without" not in report


def test_captions_are_dated_by_the_audio_heard() -> None:
    recording = load_recording(SONNET)
    assert recording.sample_rate == SAMPLE_RATE
    seconds = 15.0
    pcm = recording.pcm[: int(seconds * SAMPLE_RATE) * 2]
    transcriber = FasterWhisperTranscriber(resolve_whisper("tiny.en"))
    pool = WorkerPool("asr")
    vad = SileroModel(silero_vad_path())
    try:
        stepped = asyncio.run(step_through(pcm, transcriber, vad, pool, config_with([]), 0.1))
    finally:
        pool.shutdown()

    schedule = stepped.schedule
    assert schedule.audio_seconds == pytest.approx(seconds)
    assert len(schedule.send_times) == 150  # one chunk per 0.1 s step
    arrivals = [u.arrival for u in stepped.updates]
    assert arrivals == sorted(arrivals)
    assert all(0.0 < a <= seconds for a in arrivals)
    # Each arrival is the end of a step, never a wall-clock time.
    assert all(abs(a * 10 - round(a * 10)) < 1e-9 for a in arrivals)
    finals = [u for u in stepped.updates if u.state == "final"]
    assert finals and stepped.segments == len({u.segment for u in finals})
    first = finals[0]
    drafts = [u for u in stepped.updates if u.state == "draft" and u.segment == first.segment]
    assert drafts and drafts[0].arrival < first.arrival
    assert "winters shall besiege" in stepped.text.lower()
