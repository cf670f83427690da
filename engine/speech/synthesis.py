"""One synthesis of a piece in its voice's worker pool (:class:`Synthesis`).

Synthesis runs in the ``tts`` worker pool (the one thread crossing, engine/workers.py; one
thread, below recognition in priority); fast voices run in a pool of their own, so that they
never wait behind a natural one. A saturated pool is retried after a short wait. Each call's
wall-clock cost is learnt (engine/speech/costs.py). A voice that fails is said once per
failing run (an :class:`ErrorEvent`), and the piece is not spoken.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from engine.events import ErrorEvent
from engine.speech.config import Publish, Run, SpeakerStats
from engine.speech.costs import SynthesisCosts
from engine.speech.voice import Synthesizer
from engine.workers import Saturated

__all__ = ["Synthesis"]

log = logging.getLogger(__name__)

SATURATED_RETRY_S = 0.1
"""How long to wait before asking a saturated pool again."""


class Synthesis:
    """Synthesis calls of one language's voices (module docstring)."""

    def __init__(
        self,
        lang: str,
        run: Run,
        run_fast: Run,
        publish: Publish,
        costs: SynthesisCosts,
        clock: Callable[[], float],
        stats: SpeakerStats,
    ) -> None:
        self._lang = lang
        self._run = run
        self._run_fast = run_fast
        """Where fast voices run: a pool of their own, never behind a natural voice."""
        self._publish = publish
        self._costs = costs
        self._clock = clock
        self._stats = stats
        self._failing = False

    async def call(self, voice: Synthesizer, text: str, rate: float, variant: int) -> bytes | None:
        """One synthesis in the voice's pool (fast voices have their own, so that they never
        wait behind a natural one; retried while a pool is saturated); its wall-clock cost
        is learnt. None if the voice failed (said once per failing run)."""
        run = self._run_fast if voice.kind == "fast" else self._run
        started = self._clock()
        while True:
            try:
                pcm = await run(voice.synthesize, text, rate, variant)
                break
            except Saturated:
                await asyncio.sleep(SATURATED_RETRY_S)
            except Exception as exc:  # a voice failure: say so once per run, keep going
                self._stats.failures += 1
                log.exception("speech synthesis failed (%s)", self._lang)
                if not self._failing:
                    self._failing = True
                    message = f"spoken translation failed ({self._lang}): {type(exc).__name__}"
                    await self._publish(ErrorEvent(message))
                return None
        self._failing = False
        assert isinstance(pcm, bytes)
        took = self._clock() - started
        self._costs.learn(voice.name, len(text), took)
        self._stats.synth_seconds += took
        return pcm
