"""Keeping pace (engine/speech/pacing.py) on a clock of its own: how far behind the voice is,
how fast it speaks then, how long a first piece may be, and the gap before a sentence."""

from __future__ import annotations

from engine.speech.config import PaceConfig
from engine.speech.costs import SynthesisCosts
from engine.speech.pacing import Pace
from tests.engine.speech.test_speech import FakeVoice


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _pace(costs: SynthesisCosts | None = None, **rules: float) -> tuple[Pace, Clock]:
    clock = Clock()
    config = PaceConfig(**rules)  # type: ignore[arg-type]
    return Pace(config, costs or SynthesisCosts(), clock), clock


def test_the_rate_rises_linearly_from_speedup_from_s_to_max_rate_at_bound_s() -> None:
    pace, _ = _pace(speedup_from_s=2.0, bound_s=6.0, max_rate=1.4)
    assert pace.rate_for(0.0) == pace.rate_for(2.0) == 1.0
    assert pace.rate_for(4.0) == 1.2
    assert pace.rate_for(6.0) == 1.4
    assert pace.rate_for(60.0) == 1.4
    assert pace.rate_for(2.5) == 1.05


def test_behind_is_the_audio_still_to_play_plus_the_queued_text() -> None:
    pace, clock = _pace(chars_per_second=10.0)
    assert pace.behind(30) == 3.0
    pace.played(clock.now, 2.0, 20, 1.0)  # 10 characters a second: the speed stays
    assert pace.waiting() == 2.0
    assert pace.behind(30) == 5.0
    clock.now += 0.5
    assert pace.behind(0) == 1.5
    # The next piece plays after this one, however early it was sent.
    pace.played(clock.now, 1.0, 10, 1.0)
    assert pace.waiting() == 2.5
    clock.now += 10.0
    assert pace.waiting() == 0.0


def test_the_voices_normal_speed_is_learnt_from_long_pieces_only() -> None:
    pace, clock = _pace(chars_per_second=10.0)
    pace.played(clock.now, 0.1, 100, 1.0)  # too short to tell
    assert pace.behind(10) - pace.waiting() == 1.0
    pace.played(clock.now, 1.0, 26, 2.0)  # 13 a second at normal speed: 10 -> 10.9
    assert abs((pace.behind(109) - pace.waiting()) - 10.0) < 1e-9


def test_the_first_piece_is_what_the_voice_synthesises_in_first_audio_s() -> None:
    costs = SynthesisCosts()
    pace, _ = _pace(costs, first_audio_s=0.5, min_lead_chars=16, lead_chars=48)
    slow, fast, sluggish = FakeVoice(name="slow"), FakeVoice(name="fast"), FakeVoice(name="x")
    costs.learn("slow", 100, 2.0)  # 0.02 s a character
    costs.learn("fast", 100, 0.001)
    costs.learn("x", 10, 10.0)
    assert pace.lead_chars(slow) == 25
    assert pace.lead_chars(fast) == 48
    assert pace.lead_chars(sluggish) == 16
    assert pace.lead_chars(None) == 16  # not loaded: the prior, a slow neural voice's (0.05)


def test_the_gap_is_the_expected_synthesis_less_the_audio_still_to_play() -> None:
    costs = SynthesisCosts()
    costs.learn("slow", 10, 1.0)  # 0.1 s a character
    pace, clock = _pace(costs, lead_s=1.0)
    voice = FakeVoice(name="slow")
    assert abs(pace.gap(voice, "x" * 20) - 2.0) < 1e-9
    assert pace.early(voice, "x" * 20) <= 0  # nothing plays: synthesise now
    pace.played(clock.now, 5.0, 75, 1.0)
    assert abs(pace.gap(voice, "x" * 20) - -3.0) < 1e-9
    assert abs(pace.early(voice, "x" * 20) - 2.0) < 1e-9  # 5 s to play, 3 s is enough
