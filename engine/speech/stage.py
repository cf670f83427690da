"""One session's speech stage: a :class:`~engine.speech.speaker.LanguageSpeaker` per language
that some listener hears with audio on (engine/speech/speaker.py has the rules of speaking)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from engine.events import Caption
from engine.speech.config import PaceConfig, Publish, Run, SpeakerStats
from engine.speech.costs import SynthesisCosts
from engine.speech.speaker import LanguageSpeaker
from engine.speech.voice import VoiceSource

__all__ = ["SessionSpeaker"]


class SessionSpeaker:
    """The speech stage of one session: a :class:`LanguageSpeaker` per language that some
    listener hears with audio on."""

    def __init__(
        self,
        voice: VoiceSource,
        run: Run,
        publish: Publish,
        config: PaceConfig | None = None,
        spoken: Iterable[str] = (),
        on_first_audio: Callable[[str, float], None] | None = None,
        costs: SynthesisCosts | None = None,
        run_fast: Run | None = None,
    ) -> None:
        self._voice = voice
        self._costs = costs if costs is not None else SynthesisCosts()
        self._run_fast = run_fast
        self._on_first_audio = on_first_audio
        self._run = run
        self._publish = publish
        self.config = config or PaceConfig()
        self._spoken = frozenset(spoken)
        """Languages a voice exists for (others are never started)."""
        self.speakers: dict[str, LanguageSpeaker] = {}
        self.stats: dict[str, SpeakerStats] = {}
        """Per language, over the whole session (a language's speaker may stop and restart
        as its audio listeners come and go)."""
        self._closing: set[asyncio.Task[None]] = set()
        self._variants: dict[str, int] = {}
        """Speaker id -> the variant of each voice that speaks them, in order of first
        appearance (the first to speak gets the default voice)."""

    def variant_of(self, caption: Caption) -> int:
        """Which of a voice's voices speaks ``caption``: one per speaker of a panel."""
        if caption.speaker is None:
            return 0
        return self._variants.setdefault(caption.speaker.id, len(self._variants))

    def set_languages(self, langs: frozenset[str]) -> None:
        """Speak exactly ``langs`` (those with a voice) from now on."""
        wanted = {lang for lang in langs if lang in self._spoken}
        for lang in set(self.speakers) - wanted:
            task = asyncio.create_task(self.speakers.pop(lang).close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        for lang in wanted - set(self.speakers):
            self.speakers[lang] = LanguageSpeaker(
                lang,
                self._voice,
                self._run,
                self._publish,
                self.config,
                stats=self.stats.setdefault(lang, SpeakerStats()),
                on_first_audio=self._on_first_audio,
                costs=self._costs,
                run_fast=self._run_fast,
            )

    def on_final(self, caption: Caption) -> None:
        """Speak a translation final; a correction (``rev`` > 0) only replaces what is
        still unspoken of its line."""
        speaker = self.speakers.get(caption.lang)
        if speaker is None or not caption.is_final:
            return
        if caption.rev:
            speaker.correct(caption)
        else:
            speaker.say(caption, self.variant_of(caption))

    def on_draft(self, caption: Caption) -> None:
        """A translation draft: an idle voice may synthesise its sentence's lead ahead
        (engine/speech/foresight.py)."""
        speaker = self.speakers.get(caption.lang)
        if speaker is not None and not caption.is_final:
            speaker.foresee(caption, self.variant_of(caption))

    async def drain(self) -> None:
        for speaker in list(self.speakers.values()):
            await speaker.drain()

    async def close(self) -> None:
        for speaker in list(self.speakers.values()):
            await speaker.close()
        self.speakers.clear()
