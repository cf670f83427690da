"""What each voice costs to synthesise, learnt from what it has spoken.

The cost is wall-clock seconds of synthesis per character of text, waiting in the ``tts``
pool included, so it rises when the machine is busy or when several languages share the
pool. One :class:`SynthesisCosts` serves every session of a process (the voices are shared),
so a session's first sentence already knows its voice. The speech stage uses it to size a
final's first piece, to start each next piece early enough, and to decide when to speak a
sentence with the fallback voice (engine/speech/pacing.py, engine/speech/fallback.py).
"""

from __future__ import annotations

import threading


class SynthesisCosts:
    """Learnt seconds of synthesis per character, by voice name (an exponential moving
    average; the first measurement replaces the prior)."""

    def __init__(self, weight: float = 0.3) -> None:
        self._weight = weight
        self._per_char: dict[str, float] = {}
        self._lock = threading.Lock()

    def per_char(self, voice: str, prior: float) -> float:
        """Seconds per character of ``voice``; ``prior`` until it has spoken."""
        return self._per_char.get(voice, prior)

    def expected(self, voice: str, chars: int, prior: float) -> float:
        """Seconds ``voice`` is expected to take to synthesise ``chars`` characters."""
        return self.per_char(voice, prior) * chars

    def learn(self, voice: str, chars: int, seconds: float) -> None:
        """One piece of ``chars`` characters took ``seconds`` to synthesise."""
        if chars <= 0:
            return
        sample = seconds / chars
        with self._lock:
            old = self._per_char.get(voice)
            self._per_char[voice] = (
                sample if old is None else (1 - self._weight) * old + self._weight * sample
            )

    def relax(self, voice: str, factor: float, prior: float) -> None:
        """Scale ``voice``'s cost (``prior`` until it has spoken) by ``factor`` (< 1): a
        voice that is not being used measures nothing, so this is how it gets tried again
        after a busy spell."""
        with self._lock:
            self._per_char[voice] = self._per_char.get(voice, prior) * factor
