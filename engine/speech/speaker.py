"""Speaking a language's translations (:class:`LanguageSpeaker`), and the rules of the speech
stage (engine/speech/stage.py): final translations in, spoken audio (:class:`SpeechAudio`) out.

Speech is made once per language that at least one listener hears with audio on (the hub's
``wanted_speech``), never once per listener, and only for finals: a draft is never spoken.
The session hands over translations only (the source language is heard from the speaker).
Per language a :class:`LanguageSpeaker` speaks its finals in order, piece by piece: a final is
split into sentences, long sentences at clauses, and the first sentence begins with a short
lead followed by growing pieces (engine/speech/pieces.py). Each piece is synthesised and
published on its own, so the first audio leaves before the rest of the sentence is
synthesised. How long the lead is follows the voice's learnt cost (engine/speech/costs.py):
a final's first piece should take about ``first_audio_s`` to synthesise.

Each rule lives in a module of its own, under the name it has here:

- Keeping pace with the speaker (engine/speech/pacing.py): the next piece is synthesised only
  when little audio is still waiting to play; a voice behind speaks faster, then skips to the
  newest final.
- Falling back, per sentence (engine/speech/fallback.py): a sentence the natural voice would
  keep the listener waiting for, or whose call stalls, is spoken by the fast fallback.
- Foresight (engine/speech/foresight.py): an idle natural voice synthesises a sentence's lead
  from its translated drafts; the final's first piece speaks it when it reads the same.
- The text queue (engine/speech/backlog.py): its overflow policy, and a corrected final
  replacing the unspoken pieces of its line.
- Synthesis (engine/speech/synthesis.py): one call in the voice's worker pool, its cost
  learnt, a failing voice said once.

The speakers of a panel get different voices where the voice has several (``variants``: a
Kokoro style, an espeak-ng variant), in order of first appearance; one queue per language
keeps the speech in the order it was said.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from engine.events import Caption, SpeechAudio
from engine.speech.backlog import Backlog, Piece
from engine.speech.config import PaceConfig, Publish, Run, SpeakerStats
from engine.speech.costs import SynthesisCosts
from engine.speech.fallback import VoiceFallback
from engine.speech.foresight import Foresight
from engine.speech.pacing import Pace
from engine.speech.synthesis import Synthesis
from engine.speech.voice import Synthesizer, VoiceSource

__all__ = ["LanguageSpeaker"]

log = logging.getLogger(__name__)


class LanguageSpeaker:
    """Speaks one language's finals in order, keeping pace (module docstring)."""

    def __init__(
        self,
        lang: str,
        voice: VoiceSource,
        run: Run,
        publish: Publish,
        config: PaceConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        stats: SpeakerStats | None = None,
        on_first_audio: Callable[[str, float], None] | None = None,
        costs: SynthesisCosts | None = None,
        run_fast: Run | None = None,
    ) -> None:
        self.lang = lang
        self._on_first_audio = on_first_audio
        self._voice_source = voice
        self._publish = publish
        self.config = config or PaceConfig()
        self._clock = clock
        self.stats = stats if stats is not None else SpeakerStats()
        costs = costs if costs is not None else SynthesisCosts()
        self._pace = Pace(self.config, costs, clock)
        self._backlog = Backlog(self.config)
        self._synthesis = Synthesis(lang, run, run_fast or run, publish, costs, clock, self.stats)
        self._fallback = VoiceFallback(
            self.config, costs, self._pace, self._synthesis, self.stats, clock
        )
        self._foresight = Foresight(
            self.config, self._pace, self._fallback, self._synthesis, self.stats
        )
        self._wake = asyncio.Event()
        self._closed = False
        self._first_pending: dict[int, float] = {}
        """Segment -> when its final was handed over, until its first audio is published."""
        self._idle = asyncio.Event()
        self._idle.set()
        self._task = asyncio.create_task(self._loop(), name=f"speech-{lang}")

    def say(self, caption: Caption, variant: int = 0) -> None:
        """Queue a final caption to be spoken (never waits), in the voice's ``variant``."""
        if self._closed or not caption.text.strip():
            return
        now = self._clock()
        lead = self._foresight.final(caption, variant, self.lead_chars())
        self._backlog.add(caption, variant, lead, now)
        self._first_pending.setdefault(caption.segment, now)
        self._idle.clear()
        self._wake.set()

    def foresee(self, caption: Caption, variant: int = 0) -> None:
        """A translated draft: synthesise its sentence's lead ahead if the natural voice is
        idle and the draft is its sentence's first segment with more than a lead of text
        (engine/speech/foresight.py); never waits."""
        if self._closed or self._backlog.started(caption.segment):
            return
        self._foresight.foresee(caption, variant, self._idle.is_set())

    def correct(self, caption: Caption) -> bool:
        """A corrected final: its text replaces the queued pieces of its segment if none of
        them was spoken yet (True); otherwise it is not spoken (False)."""
        if self._closed:
            return False
        return self._backlog.replace(caption, self.lead_chars())

    @property
    def queued(self) -> int:
        return len(self._backlog)

    def lead_chars(self) -> int:
        """How long a final's first piece may be: what the voice synthesises in about
        ``first_audio_s``, within ``min_lead_chars`` and ``lead_chars``."""
        voices = self._fallback.voices
        return self._pace.lead_chars(voices.voice if voices else None)

    def behind(self) -> float:
        """Seconds the voice is behind: audio still to play plus queued text to speak."""
        return self._pace.behind(self._backlog.chars())

    def rate_for(self, behind: float) -> float:
        return self._pace.rate_for(behind)

    def gap(self, voice: Synthesizer, text: str) -> float:
        """Seconds of silence the listener would hear before ``voice`` has spoken ``text``:
        its expected synthesis time minus the audio still waiting to play."""
        return self._pace.gap(voice, text)

    async def close(self) -> None:
        """Stop speaking: drop what is queued and end the task."""
        self._closed = True
        self._backlog.clear()
        self._wake.set()
        self._idle.set()
        self._foresight.cancel()
        self._fallback.cancel()  # their pools still finish the calls; the results are not wanted
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def drain(self) -> None:
        """Wait until everything queued has been spoken (tests and benches)."""
        if not self._task.done():
            await self._idle.wait()

    async def _loop(self) -> None:
        loaded = await self._voice_source(self.lang)
        if loaded is None:
            log.warning("no voice for %s: its listeners get captions only", self.lang)
            self._closed = True
            self._backlog.clear()
            self._idle.set()
            return
        self._fallback.load(loaded)
        while not self._closed:
            voices = self._fallback.voices  # the natural voice may have finished loading
            assert voices is not None
            if not self._backlog:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            head = self._backlog.head
            voice = self._fallback.voice_of(head.sentence) or voices.voice
            early = self._pace.early(voice, head.text)
            if early > 0:
                await asyncio.sleep(early)
                continue
            behind = self.behind()
            self.stats.max_behind = max(self.stats.max_behind, behind)
            if behind > self.config.bound_s:
                self._backlog.skip_to_newest()
            rate = self.rate_for(self.behind())
            piece = self._backlog.take()
            await self._speak(self._fallback.choose(piece, voices), piece, rate)

    async def _speak(self, voice: Synthesizer, piece: Piece, rate: float) -> None:
        call = self._foresight.serve(piece, voice)
        if call is None:
            call = asyncio.ensure_future(
                self._synthesis.call(voice, piece.text, rate, piece.variant)
            )
        spoken = await self._fallback.spoken(voice, piece, rate, call)
        if spoken is None:
            return
        voice, pcm = spoken
        if self._fallback.stood_in(voice):
            self.stats.fallback_pieces += 1  # spoken by the fast voice in a natural one's place
        skipped = self._backlog.take_dropped()
        self.stats.skipped += skipped
        audio = SpeechAudio(
            segment=piece.segment,
            lang=self.lang,
            sample_rate=voice.sample_rate,
            pcm=pcm,
            text=piece.text,
            last=piece.last,
            skipped=skipped,
            rate=rate,
            voice=voice.kind,
        )
        await self._publish(audio)
        now = self._clock()
        first = self._first_pending.pop(piece.segment, None)
        if first is not None:
            self.stats.first_audio.append(now - first)
            if self._on_first_audio is not None:
                self._on_first_audio(self.lang, now - first)
        for segment in [s for s in self._first_pending if s < piece.segment]:
            del self._first_pending[segment]  # skipped before any audio
        self.stats.pieces += 1
        self.stats.audio_seconds += audio.duration
        self._pace.played(now, audio.duration, len(piece.text), rate)
