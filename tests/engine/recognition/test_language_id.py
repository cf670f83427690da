"""Detecting which of a session's languages is spoken: the held-audio logic with a fake
identifier, and Whisper base's identification restricted to two languages on real clips."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from bench.talk import speech_start
from engine.audio import SAMPLE_RATE
from engine.recognition.language_id import DetectingRecognizer
from tests.data import SPEECH_BY_LANGUAGE
from tests.support import read_wav


class FakeRecognizer:
    def __init__(self, language: str, start_time: float = 0.0) -> None:
        self.start_time = start_time
        self.language = language
        self.pushed = 0
        self.context = ""
        self.skipped_drafts = 0
        self.backlog = 0.0
        self.received_until = 0.0

    def push(self, samples: np.ndarray) -> None:
        self.pushed += len(samples)

    def hand_over(self, samples: np.ndarray) -> None:
        self.push(samples)

    async def step(self, *, draft: bool = True) -> list[object]:
        return [f"{self.language}:{self.pushed}"]

    async def finish(self) -> list[object]:
        return [f"final {self.language}:{self.pushed}"]

    def take_final_audio(self, segment: int) -> None:
        return None


async def _score(audio: np.ndarray) -> np.ndarray:
    """A fake VAD: a 512-sample window is speech when it is not silent."""
    windows = len(audio) // 512
    blocks = audio[: windows * 512].reshape(windows, 512)
    return (np.abs(blocks).max(axis=1) > 0).astype(np.float32)


def _tone(seconds: float, level: float = 0.003) -> np.ndarray:
    """A quiet tone (-50 dBFS): detection must not depend on loudness."""
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def _silence(seconds: float) -> np.ndarray:
    return np.zeros(int(seconds * SAMPLE_RATE), np.float32)


def test_speech_start_skips_leading_silence() -> None:
    audio = np.concatenate([_silence(1.0), _tone(2.0, level=0.3)])
    start, speech = speech_start(audio)
    assert abs(start / SAMPLE_RATE - 1.0) < 0.05
    assert abs(speech - 2.0) < 0.05
    assert speech_start(_silence(1.0)) == (SAMPLE_RATE, 0.0)


async def test_holds_audio_until_enough_speech_then_hands_everything_over() -> None:
    asked: list[tuple[int, tuple[str, ...]]] = []
    made: list[FakeRecognizer] = []

    async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
        asked.append((len(audio), tuple(among)))
        return {"en": 0.02, "es": 0.98}

    def make(language: str, start: float) -> FakeRecognizer:
        made.append(FakeRecognizer(language, start))
        return made[-1]

    detector = DetectingRecognizer(("en", "es"), identify, make, _score, min_speech_s=1.5)  # type: ignore[arg-type]
    detector.push(_silence(3.0))
    assert await detector.step() == []
    assert detector.received_until == pytest.approx(3.0)  # silence dropped, time kept
    detector.push(_tone(1.0))
    assert await detector.step() == [] and not asked  # 1 s of speech: not enough yet
    detector.push(_tone(1.0))
    events = await detector.step()
    assert detector.language == "es" and len(made) == 1
    # The identifier heard the speech (from one window before it); the recogniser got the
    # lead-in and all speech, and starts where the lead-in does.
    assert asked[0][1] == ("en", "es")
    assert 0 <= asked[0][0] - 2 * SAMPLE_RATE <= 2 * 512
    held = made[0].pushed
    assert 2 * SAMPLE_RATE < held <= int(2.5 * SAMPLE_RATE) + 512
    assert made[0].start_time == pytest.approx(3.0 - (held - 2 * SAMPLE_RATE) / SAMPLE_RATE)
    assert events == [f"es:{held}"]
    detector.push(_tone(0.5))
    assert await detector.finish() == [f"final es:{held + SAMPLE_RATE // 2}"]


async def test_audio_that_arrives_while_identifying_is_recognised() -> None:
    """The words right after the language is identified were lost: audio pushed while the
    identifier ran (it takes a worker for a while) never reached the recogniser."""
    made: list[FakeRecognizer] = []
    detector: DetectingRecognizer

    async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
        detector.push(_tone(0.25))  # the presenter keeps talking meanwhile
        detector.push(_tone(0.25))
        return {"en": 0.99, "es": 0.01}

    def make(language: str, start: float) -> FakeRecognizer:
        made.append(FakeRecognizer(language, start))
        return made[-1]

    detector = DetectingRecognizer(("en", "es"), identify, make, _score, min_speech_s=1.5)  # type: ignore[arg-type]
    detector.push(_tone(2.0))
    await detector.step()
    assert made[0].pushed == int(2.5 * SAMPLE_RATE)


async def test_a_short_turn_is_detected_when_it_stops() -> None:
    async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
        return {"en": 0.9, "es": 0.1}

    detector = DetectingRecognizer(("en", "es"), identify, FakeRecognizer, _score)  # type: ignore[arg-type]
    detector.push(_tone(0.8))
    assert await detector.step() == []
    assert await detector.finish() == [f"final en:{int(0.8 * SAMPLE_RATE)}"]
    silent = DetectingRecognizer(("en", "es"), identify, FakeRecognizer, _score)  # type: ignore[arg-type]
    silent.push(_silence(2.0))
    assert await silent.finish() == [] and silent.language is None


def _first_speech(lang: str, seconds: float) -> np.ndarray:
    """``seconds`` of a clip from where its speech starts (a FLEURS clip opens with up to
    2.4 s of silence), as a live turn hands them to the detector."""
    pcm, rate = read_wav(SPEECH_BY_LANGUAGE[lang])
    assert rate == SAMPLE_RATE
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
    start, speech = speech_start(audio)
    assert speech >= seconds, (lang, speech)
    return audio[start : start + int(seconds * SAMPLE_RATE)]


@pytest.mark.model
@pytest.mark.parametrize(
    ("lang", "other"), [("en", "es"), ("es", "en"), ("de", "en"), ("fr", "es")]
)
def test_whisper_base_identifies_the_spoken_one_of_two(lang: str, other: str) -> None:
    from models.catalog import resolve_whisper
    from models.whisper import FasterWhisperTranscriber

    model = FasterWhisperTranscriber(resolve_whisper("base"))
    audio = _first_speech(lang, 3.0)
    scores = model.identify(audio, (other, lang))
    assert max(scores, key=scores.__getitem__) == lang, scores
    assert abs(sum(scores.values()) - 1.0) < 1e-6


async def test_an_unsure_answer_waits_for_more_speech() -> None:
    """Whisper's identification on 1.5 s of speech leaned to English for a Portuguese turn
    (0.88); half a second more made it sure. An answer below ``confident`` is asked again."""
    answers = iter([{"en": 0.88, "pt": 0.12}, {"en": 0.15, "pt": 0.85}, {"en": 0.01, "pt": 0.99}])
    asked: list[int] = []

    async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
        asked.append(len(audio))
        return next(answers)

    detector = DetectingRecognizer(("en", "pt"), identify, FakeRecognizer, _score, min_speech_s=1.5)  # type: ignore[arg-type]
    detector.push(_tone(1.6))
    assert await detector.step() == [] and len(asked) == 1
    detector.push(_tone(0.2))
    assert await detector.step() == [] and len(asked) == 1  # not retry_s more speech yet
    detector.push(_tone(0.5))
    assert await detector.step() == [] and len(asked) == 2  # asked again, still unsure
    detector.push(_tone(0.6))
    held = int(2.9 * SAMPLE_RATE)
    assert await detector.step() == [f"pt:{held}"] and len(asked) == 3
    assert detector.language == "pt"
    assert asked[2] > asked[1] > asked[0]


async def test_an_unsure_answer_is_taken_when_the_turn_stops_or_the_wait_is_over() -> None:
    async def identify(audio: np.ndarray, among: Sequence[str]) -> dict[str, float]:
        return {"en": 0.3, "es": 0.7}

    stopped = DetectingRecognizer(("en", "es"), identify, FakeRecognizer, _score)  # type: ignore[arg-type]
    stopped.push(_tone(2.0))
    assert await stopped.step() == []
    assert await stopped.finish() == [f"final es:{2 * SAMPLE_RATE}"]
    waited = DetectingRecognizer(("en", "es"), identify, FakeRecognizer, _score, max_wait_s=3.0)  # type: ignore[arg-type]
    for _ in range(5):
        waited.push(_tone(0.5))
        assert await waited.step() == []
    waited.push(_tone(0.5))
    assert await waited.step() == [f"es:{3 * SAMPLE_RATE}"]
