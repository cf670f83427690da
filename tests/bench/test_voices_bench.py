"""The voices bench's recogniser (bench/voices.py): what a voice said is scored by Whisper base
reading it back, so the recogniser must read a real recording as a person said it."""

from __future__ import annotations

import numpy as np

from bench.voices import Recogniser, corpus_wer
from tests.data import SPANISH, SPANISH_ID, fleurs_clip
from tests.support import read_wav


def test_the_recogniser_reads_a_real_recording_back() -> None:
    pcm, rate = read_wav(SPANISH)
    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
    text = Recogniser().transcribe(samples, rate, "es")
    said = fleurs_clip(SPANISH_ID)["source_text"]
    assert corpus_wer([said], [text], "es") < 0.3, text
