"""The voices a process has, as one typed port for the session factory."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.speech.config import PaceConfig, Publish
from engine.speech.costs import SynthesisCosts
from engine.speech.stage import SessionSpeaker
from engine.speech.voice import LanguageVoices, VoiceProvider
from engine.workers import WorkerPool


@dataclass(frozen=True, slots=True)
class Speech:
    """Voices; the ``tts`` pool every voice runs on (one thread, below recognition in
    priority) and the ``tts-fast`` pool of the fallback voices, which must not wait behind a
    slow natural voice; the pacing rules; and what each voice has been measured to cost
    (shared by every session, like the voices)."""

    voices: VoiceProvider
    pool: WorkerPool
    fallback_pool: WorkerPool
    config: PaceConfig = field(default_factory=PaceConfig)
    costs: SynthesisCosts = field(default_factory=SynthesisCosts)

    def stage(
        self, publish: Publish, on_first_audio: Callable[[str, float], None] | None = None
    ) -> SessionSpeaker:
        """A session's speech stage (voices load on first use, in the pool)."""

        async def voices(lang: str) -> LanguageVoices | None:
            fallback = await self.fallback_pool.run(self.voices.load_fallback, lang)
            loading = asyncio.ensure_future(self.pool.run(self.voices.load, lang))
            if fallback is not None:
                # A natural voice still loading after the gap a listener accepts: the fast
                # voice speaks until it is ready.
                await asyncio.wait({loading}, timeout=self.config.fallback_gap_s)
                if not loading.done():
                    return LanguageVoices(fallback, loading=loading)
            voice = await loading
            return None if voice is None else LanguageVoices(voice, fallback)

        return SessionSpeaker(
            voices,
            self.pool.run,
            publish,
            self.config,
            spoken=self.voices.languages(),
            on_first_audio=on_first_audio,
            costs=self.costs,
            run_fast=self.fallback_pool.run,
        )
