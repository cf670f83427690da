"""What the speech stage needs of a voice, and of the voices of a process.

Two kinds of voice (:data:`VoiceKind`), named so on the listener's page: a *natural* voice
(Piper, Kokoro: neural, slower to synthesise) and a *fast* one (espeak-ng: formant
synthesis, instant but robotic). A language whose voice is natural may also have a fast
*fallback* that speaks a sentence instead when the natural voice cannot keep up
(engine/speech/fallback.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

VoiceKind = Literal["natural", "fast"]


class Synthesizer(Protocol):
    """A voice: text in, 16-bit mono PCM out (blocking; run it in a worker pool)."""

    name: str
    sample_rate: int
    kind: VoiceKind
    variants: int
    """How many distinct voices it speaks in (the speakers of a panel get different ones)."""

    def synthesize(self, text: str, rate: float = 1.0, variant: int = 0) -> bytes:
        """Speak ``text``; ``rate`` > 1 speaks faster (1.0 is the voice's normal speed);
        ``variant`` picks one of its voices (taken modulo ``variants``; 0 is the default)."""
        ...


@dataclass(frozen=True, slots=True)
class LanguageVoices:
    """A language's voice, and the fast voice that speaks a sentence in its place when it
    falls behind (None: the voice speaks everything). ``loading``: the natural voice, still
    loading (on a busy machine the low-priority pool may take a while); until it is ready
    ``voice`` is the fast one, and the speaker takes it up at the next sentence after."""

    voice: Synthesizer
    fallback: Synthesizer | None = None
    loading: asyncio.Future[Synthesizer | None] | None = None

    def ready(self) -> LanguageVoices:
        """These voices once the natural voice has loaded: itself, with ``voice`` in front
        of the fast one (``self`` while it is still loading, or if it failed)."""
        if self.loading is None or not self.loading.done():
            return self
        natural = (
            None if self.loading.cancelled() or self.loading.exception() else self.loading.result()
        )
        if natural is None:
            return LanguageVoices(self.voice, self.fallback)
        return LanguageVoices(natural, self.voice)


VoiceSource = Callable[[str], Awaitable[LanguageVoices | None]]
"""Gives the (loaded) voices of a language, or None if no voice speaks it."""


class VoiceProvider(Protocol):
    """The voices of a process (:class:`models.voices.VoiceBank`)."""

    def languages(self) -> frozenset[str]:
        """Languages some voice speaks."""
        ...

    def load(self, lang: str) -> Synthesizer | None:
        """The loaded voice for ``lang`` (None if none speaks it); blocking, thread-safe."""
        ...

    def load_fallback(self, lang: str) -> Synthesizer | None:
        """The loaded fast voice that stands in for ``lang``'s voice (None if there is
        none); blocking, thread-safe."""
        ...
