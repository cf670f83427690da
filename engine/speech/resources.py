"""The voices a process has, as one typed port for the session factory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from engine.speech.speaker import (
    PaceConfig,
    Publish,
    SessionSpeaker,
    Synthesizer,
    VoiceProvider,
)
from engine.workers import WorkerPool


@dataclass(frozen=True, slots=True)
class Speech:
    """Voices, the ``tts`` pool every synthesiser runs on, and the pacing rules."""

    voices: VoiceProvider
    pool: WorkerPool
    config: PaceConfig = field(default_factory=PaceConfig)

    def stage(
        self, publish: Publish, on_first_audio: Callable[[str, float], None] | None = None
    ) -> SessionSpeaker:
        """A session's speech stage (voices load on first use, in the pool)."""

        async def voice(lang: str) -> Synthesizer | None:
            return await self.pool.run(self.voices.load, lang)

        return SessionSpeaker(
            voice,
            self.pool.run,
            publish,
            self.config,
            spoken=self.voices.languages(),
            on_first_audio=on_first_audio,
        )
