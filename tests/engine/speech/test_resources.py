"""The speech port: voices load in their pools, and a natural voice that is slow to load
(its pool runs below everything else) is stood in for by the fast voice until it is ready."""

from __future__ import annotations

import asyncio
import threading

from engine.speech.config import PaceConfig
from engine.speech.resources import Speech
from engine.workers import WorkerPool
from tests.engine.speech.test_speech import FakeVoice, Sink, _final


class SlowToLoad:
    """Spanish only: the natural voice loads once ``release`` is set; the fast one at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.natural = FakeVoice(name="kokoro")
        self.fast = FakeVoice(name="espeak", kind="fast")

    def languages(self) -> frozenset[str]:
        return frozenset({"es"})

    def load(self, lang: str) -> FakeVoice:
        self.release.wait(10)
        return self.natural

    def load_fallback(self, lang: str) -> FakeVoice:
        return self.fast


async def test_the_fast_voice_stands_in_while_the_natural_one_loads() -> None:
    voices = SlowToLoad()
    natural_pool, fast_pool = WorkerPool("tts"), WorkerPool("tts-fast")
    config = PaceConfig(fallback_gap_s=0.5, chars_per_second=100.0)
    speech = Speech(voices, natural_pool, fast_pool, config)
    sink = Sink()
    stage = speech.stage(sink.publish)
    try:
        stage.set_languages(frozenset({"es", "fr"}))  # no voice speaks fr
        assert set(stage.speakers) == {"es"}
        stage.on_final(_final(0, "Primera."))
        await asyncio.wait_for(stage.drain(), 5)
        voices.release.set()
        while natural_pool.calls < 1:  # the load has returned
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        stage.on_final(_final(1, "Segunda."))
        await asyncio.wait_for(stage.drain(), 5)
        assert [(a.segment, a.voice) for a in sink.audio] == [(0, "fast"), (1, "natural")]
        # The fast voice never ran in the natural voice's pool, nor waited behind its load.
        assert voices.fast.calls == [("Primera.", 1.0)] and fast_pool.calls == 2
        assert voices.natural.calls == [("Segunda.", 1.0)] and natural_pool.calls == 2
    finally:
        await stage.close()
        natural_pool.shutdown()
        fast_pool.shutdown()
