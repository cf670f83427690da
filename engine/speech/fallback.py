"""Falling back, per sentence (:class:`VoiceFallback`): which voice speaks each sentence.

A language whose voice is natural may have a fast fallback (espeak-ng, in a pool of its own).
At each sentence's first piece the speaker computes the *gap*: the voice's expected synthesis
time for that piece minus the audio still waiting to play, the silence a listener would hear
before the sentence (engine/speech/pacing.py). Over ``fallback_gap_s`` the whole sentence is
spoken by the fallback instead. The gap grows when synthesis slows (a busy machine, several
languages sharing the ``tts`` pool), since the cost is measured in wall-clock time; each
sentence the fallback speaks relaxes the voice's learnt cost (``fallback_relax``), so the
voice is tried again. A natural call that has not answered once the listener would wait
``fallback_gap_s`` (a sudden load) is given up on: the fallback speaks that piece and the rest
of its sentence, the call finishes on its own (the fallback speaks until it has), and its
time is learnt. Until a natural voice has loaded (the low-priority pool may take a while on a
busy machine), its fast voice speaks every sentence. Each audio header names the kind of
voice that spoke it (``voice``). Measured: docs/metrics.md, "Natural voices" ("Captions
with a Kokoro listener", "First audio and capacity").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from engine.speech.backlog import Piece
from engine.speech.config import PaceConfig, SpeakerStats
from engine.speech.costs import SynthesisCosts
from engine.speech.pacing import Pace
from engine.speech.synthesis import Synthesis
from engine.speech.voice import LanguageVoices, Synthesizer

__all__ = ["VoiceFallback"]


class VoiceFallback:
    """A language's voices once loaded, the voice chosen for the sentence being spoken, and
    the natural-voice calls given up on (module docstring)."""

    def __init__(
        self,
        config: PaceConfig,
        costs: SynthesisCosts,
        pace: Pace,
        synthesis: Synthesis,
        stats: SpeakerStats,
        clock: Callable[[], float],
    ) -> None:
        self._config = config
        self._costs = costs
        self._pace = pace
        self._synthesis = synthesis
        self._stats = stats
        self._clock = clock
        self._voices: LanguageVoices | None = None
        self._sentence = 0
        """The sentence being spoken, and the voice chosen for it."""
        self._sentence_voice: Synthesizer | None = None
        self._abandoned: set[asyncio.Future[bytes | None]] = set()
        """Natural-voice calls given up on, still finishing in their pool."""

    def load(self, voices: LanguageVoices) -> None:
        """The language's voices, now loaded."""
        self._voices = voices

    @property
    def voices(self) -> LanguageVoices | None:
        """The language's voices (None until loaded); the natural voice once it has loaded."""
        return self._voices

    @property
    def finishing(self) -> bool:
        """Whether a pool still finishes a call given up on."""
        return bool(self._abandoned)

    def voice_of(self, sentence: int) -> Synthesizer | None:
        """The voice already chosen for ``sentence`` (None before its first piece)."""
        return self._sentence_voice if sentence == self._sentence else None

    def choose(self, piece: Piece, voices: LanguageVoices) -> Synthesizer:
        """The voice of ``piece``: its sentence's, chosen at the sentence's first piece
        (module docstring)."""
        chosen = self.voice_of(piece.sentence)
        if chosen is not None:
            return chosen
        chosen = voices.voice
        if voices.loading is not None:
            return self._while_loading(piece, voices)
        if voices.fallback is not None and self.falls_back(voices, piece.text):
            chosen = voices.fallback
            self._costs.relax(
                voices.voice.name, self._config.fallback_relax, self._config.cost_prior_s
            )
        self._sentence, self._sentence_voice = piece.sentence, chosen
        return chosen

    def falls_back(self, voices: LanguageVoices, text: str) -> bool:
        """Whether a sentence beginning with ``text`` goes to the fallback: the voice's
        pool is still busy with a call given up on, or the listener would wait too long."""
        return voices.fallback is not None and (
            bool(self._abandoned)
            or self._pace.gap(voices.voice, text) > self._config.fallback_gap_s
        )

    def _while_loading(self, piece: Piece, voices: LanguageVoices) -> Synthesizer:
        """A sentence's voice while the natural voice loads: the fast one, until it is
        ready (then the natural voice, with the fast one as its fallback, from now on)."""
        ready = voices.ready()
        if ready is not voices:
            self._voices = ready
            return self.choose(piece, ready)
        self._sentence, self._sentence_voice = piece.sentence, voices.voice
        return voices.voice

    def stood_in(self, voice: Synthesizer) -> bool:
        """Whether ``voice`` spoke in a natural one's place (the fallback, or the fast voice
        while the natural one loads)."""
        voices = self._voices
        return voices is not None and (voice is voices.fallback or voices.loading is not None)

    def abandon(self, call: asyncio.Future[bytes | None]) -> None:
        """Give up on ``call``: unwanted, it still finishes in its pool."""
        self._abandoned.add(call)
        call.add_done_callback(self._abandoned.discard)

    async def spoken(
        self,
        voice: Synthesizer,
        piece: Piece,
        rate: float,
        call: asyncio.Future[bytes | None],
    ) -> tuple[Synthesizer, bytes] | None:
        """The audio of ``piece`` from ``call`` (``voice`` synthesising it); a natural voice
        that has not answered once the listener would have waited ``fallback_gap_s`` is left
        to finish on its own, and the piece, and the rest of its sentence, are spoken by the
        fallback (module docstring). None if the voice failed."""
        fallback = self._voices.fallback if self._voices is not None else None
        if fallback is None or voice is fallback:
            pcm = await call
            return None if pcm is None else (voice, pcm)
        patience = self._pace.waiting() + self._config.fallback_gap_s
        started = self._clock()
        done, _ = await asyncio.wait({call}, timeout=patience)
        if call in done:
            pcm = call.result()
            return None if pcm is None else (voice, pcm)
        self.abandon(call)
        # At least this slow: the sentences after this one choose by it.
        self._costs.learn(voice.name, len(piece.text), self._clock() - started)
        self._stats.stalls += 1
        self._sentence_voice = fallback
        pcm = await self._synthesis.call(fallback, piece.text, rate, piece.variant)
        return None if pcm is None else (fallback, pcm)

    def cancel(self) -> None:
        """Closing: the calls given up on are not wanted (their pools still finish them)."""
        for call in list(self._abandoned):
            call.cancel()
