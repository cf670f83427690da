"""Keeping pace with the speaker (:class:`Pace`, the rules :class:`PaceConfig` sets).

The speaker models the listener's playback clock (audio plays in real time from when it is
sent) and synthesises the next piece only when less than ``lead_s`` plus the piece's expected
synthesis time is still waiting to play, so the text not yet spoken stays here where it can be
sped up or skipped, not in the listener's buffer, and a slow voice still starts each piece in
time. Before each piece it estimates how far behind the live speaker the voice is (audio still
to play + text still queued, at the voice's normal speed):

- over ``speedup_from_s`` it speaks faster, rising linearly to ``max_rate`` at ``bound_s``;
- over ``bound_s`` it skips to the newest final: the older finals' queued pieces are dropped and
  the next audio header says how many (``skipped``) so the listener can be told
  (engine/speech/backlog.py).

How long a final's first piece is follows the voice's learnt cost (engine/speech/costs.py): it
should take about ``first_audio_s`` to synthesise. The *gap* before a sentence, the voice's
expected synthesis time for its first piece minus the audio still waiting to play, is the
silence a listener would hear (engine/speech/fallback.py decides by it). Measurements behind
the defaults: docs/metrics.md, "Spoken translation" and "Natural voices".
"""

from __future__ import annotations

from collections.abc import Callable

from engine.speech.config import PaceConfig
from engine.speech.costs import SynthesisCosts
from engine.speech.voice import Synthesizer

__all__ = ["Pace"]

SPEED_LEARNT_OVER_S = 0.2
"""A voice's normal speed is learnt only from pieces whose audio lasts longer than this."""
SPEED_WEIGHT = 0.3
"""The weight of each piece in the learnt normal speed (an exponential moving average)."""
_SPAN_FLOOR_S = 1e-6
"""Keeps the speed-up's span above zero when ``bound_s`` is ``speedup_from_s``."""


class Pace:
    """The listener's playback clock, the voice's learnt normal speed (characters a second)
    and the pacing rules that follow from them (module docstring)."""

    def __init__(
        self, config: PaceConfig, costs: SynthesisCosts, clock: Callable[[], float]
    ) -> None:
        self._config = config
        self._costs = costs
        self._clock = clock
        self._play_until = 0.0
        """When the audio sent so far has played, on ``clock``."""
        self._cps = config.chars_per_second

    def waiting(self) -> float:
        """Seconds of audio sent that are still waiting to play."""
        return max(0.0, self._play_until - self._clock())

    def early(self, voice: Synthesizer, text: str) -> float:
        """Seconds until ``voice`` should synthesise the piece ``text``: once less than
        ``lead_s`` plus its expected synthesis time is still waiting to play (<= 0: now)."""
        lead = self._config.lead_s + self.expected(voice, text)
        return self._play_until - self._clock() - lead

    def behind(self, chars: int) -> float:
        """Seconds the voice is behind: audio still to play plus ``chars`` characters of queued
        text to speak, at the voice's normal speed."""
        return self.waiting() + chars / self._cps

    def rate_for(self, behind: float) -> float:
        """The speed to speak at when ``behind`` seconds behind: 1.0 up to ``speedup_from_s``,
        then rising linearly to ``max_rate`` at ``bound_s``."""
        c = self._config
        if behind <= c.speedup_from_s:
            return 1.0
        share = (behind - c.speedup_from_s) / max(c.bound_s - c.speedup_from_s, _SPAN_FLOOR_S)
        return round(min(c.max_rate, 1.0 + share * (c.max_rate - 1.0)), 3)

    def lead_chars(self, voice: Synthesizer | None) -> int:
        """How long a final's first piece may be: what ``voice`` (None: not loaded yet)
        synthesises in about ``first_audio_s``, within ``min_lead_chars`` and ``lead_chars``."""
        c = self._config
        per_char = self.per_char(voice)
        fits = int(c.first_audio_s / per_char) if per_char > 0 else c.lead_chars
        return max(c.min_lead_chars, min(c.lead_chars, fits))

    def per_char(self, voice: Synthesizer | None) -> float:
        """``voice``'s learnt seconds of synthesis per character (``cost_prior_s`` until it
        has spoken)."""
        name = voice.name if voice is not None else ""
        return self._costs.per_char(name, self._config.cost_prior_s)

    def expected(self, voice: Synthesizer, text: str) -> float:
        """Seconds ``voice`` is expected to take to synthesise ``text``."""
        return self.per_char(voice) * len(text)

    def gap(self, voice: Synthesizer, text: str) -> float:
        """Seconds of silence the listener would hear before ``voice`` has spoken ``text``:
        its expected synthesis time minus the audio still waiting to play."""
        return self.expected(voice, text) - self.waiting()

    def played(self, now: float, seconds: float, chars: int, rate: float) -> None:
        """A piece of ``chars`` characters, ``seconds`` of audio at ``rate``, was sent at
        ``now``: it plays after the audio before it, and teaches the voice's normal speed."""
        if seconds > SPEED_LEARNT_OVER_S:
            cps = chars / (seconds * rate)
            self._cps = (1 - SPEED_WEIGHT) * self._cps + SPEED_WEIGHT * cps
        self._play_until = max(self._play_until, now) + seconds
