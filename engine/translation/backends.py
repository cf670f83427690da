"""Machine translation: the Translator interface, its backends, and how a session reaches them.

Draft-then-refine, as for recognition: each draft update of a segment is translated fast
(coalesced, newest wins), each final once with the route's best backend and context. The parts:

- :class:`Translator` (this module): one direction of one backend, synchronous, called in a
  worker thread; the adapters live in models/ (Apertium: :class:`models.apertium.ApertiumBackend`,
  CTranslate2: :class:`models.ct2_translator.CT2Translator`); Whisper-translate finals come
  from the segment's audio through :func:`whisper_translate`.
- :mod:`engine.translation.routes`: which backend serves which pair (:class:`RouteTable`).
- :class:`TranslatorProvider` (this module): loads each backend once per process, gives each
  its own bounded :class:`WorkerPool`, and builds the :class:`TargetPlan` of a route
  (:class:`models.translators.Translators`).
- :mod:`engine.translation.stage`: :class:`SessionTranslator`, one per session.
- :mod:`engine.translation.text`: stabilisation of drafts and the glossary (pure).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.recognition.asr import (
    TOKENS_PER_SECOND,
    Decoded,
    DecodeOptions,
    PromptedTranscriber,
    token_budget,
)
from engine.recognition.policy import guard_repetitions, join_words
from engine.translation.routes import TranslationRoute
from engine.workers import WorkerPool

log = logging.getLogger(__name__)


class Translator(Protocol):
    """One translation direction of one backend. Called from a worker thread."""

    name: str
    passes_placeholders: bool
    """Whether private-use placeholder characters come back unchanged (glossary protection);
    when not, glossary terms are substituted into the source text instead."""

    def translate(self, text: str, context: str | None = None) -> str:
        """``text`` translated. ``context`` is the previous final's source text; a backend
        that cannot use it ignores it. Raises on failure (the caller falls back)."""
        ...


@dataclass(frozen=True, slots=True)
class PooledTranslator:
    """A translator and the worker pool it runs on: the only way the event loop calls it."""

    translator: Translator
    pool: WorkerPool

    @property
    def name(self) -> str:
        return self.translator.name

    async def translate(self, text: str, context: str | None = None) -> str:
        """Raises :class:`engine.workers.Saturated` when the pool already has too many calls."""
        return await self.pool.run(self.translator.translate, text, context)


@dataclass(frozen=True, slots=True)
class Weighed:
    """A decode's text, how sure the model was of it (:attr:`Decoded.score`; None where the
    model does not say) and whether it ended by itself (:attr:`Decoded.ended`: not cut by
    its token budget)."""

    text: str
    score: float | None = None
    ended: bool = False


class WhisperTranslate(Protocol):
    """Speech translation of a sentence's audio (16 kHz) into English, after ``prompt``
    (the text before it). A ``prefix`` is forced as the translation's first words, and the
    text returned begins with it: a draft keeps the words its reader already sees."""

    def __call__(
        self, audio: np.ndarray, prompt: str | None, prefix: str | None = None
    ) -> Awaitable[str]: ...

    def each(
        self, audio: np.ndarray, prompts: Sequence[str | None], prefix: str | None = None
    ) -> Awaitable[list[Weighed]]:
        """``audio`` translated after each of ``prompts``, in one call on the pool (the audio
        encoded once), each with how sure the decode was."""
        ...


def whisper_translate(
    transcriber: PromptedTranscriber,
    pool: WorkerPool,
    source: str,
    *,
    beam_size: int = 5,
    max_tokens_per_second: float = TOKENS_PER_SECOND,
    behind: bool = False,
    full_window: bool = False,
) -> WhisperTranslate:
    """A :class:`WhisperTranslate` for speech in ``source`` with a multilingual Whisper model
    (``task="translate"``, beam 5, temperature 0: MODELS.md), run on ``pool`` (the ASR pool:
    the model is the same one the session recognises with), last in its queue when
    ``behind``, in Whisper's full 30 s window when ``full_window`` (slower; what the route
    measured offline: docs/metrics.md, "Finals in the full window, again"). Which prompt a
    sentence gets, and which decode is kept, is :mod:`engine.translation.prompted`."""
    return _WhisperTranslate(
        transcriber, pool, source, beam_size, max_tokens_per_second, behind, full_window
    )


@dataclass(frozen=True, slots=True)
class _WhisperTranslate:
    transcriber: PromptedTranscriber
    pool: WorkerPool
    source: str
    beam_size: int
    max_tokens_per_second: float
    behind: bool
    full_window: bool

    async def __call__(
        self, audio: np.ndarray, prompt: str | None, prefix: str | None = None
    ) -> str:
        (made,) = await self.each(audio, [prompt], prefix)
        return made.text

    async def each(
        self, audio: np.ndarray, prompts: Sequence[str | None], prefix: str | None = None
    ) -> list[Weighed]:
        seconds = len(audio) / 16000
        options = [
            DecodeOptions(
                language=self.source,
                task="translate",
                beam_size=self.beam_size,
                prompt=prompt or None,
                prefix=prefix or None,
                word_timestamps=False,
                # Bounds every decode; loops are cut here rather than after the fact.
                max_new_tokens=token_budget(seconds, self.max_tokens_per_second),
                full_window=self.full_window,
            )
            for prompt in prompts
        ]
        run = self.pool.run_last if self.behind else self.pool.run
        samples = np.ascontiguousarray(audio, dtype=np.float32)
        decodes = await run(self.transcriber.transcribe_each, samples, options)
        return [Weighed(self._text(d, prefix), d.score, d.ended) for d in decodes]

    @staticmethod
    def _text(decoded: Decoded, prefix: str | None) -> str:
        # The token bound stops a loop; the guard cuts what it had written by then ("he had
        # to pass by a timebreak. 1 1 1 1 ...", a FLEURS clip).
        text = join_words(guard_repetitions(decoded.words, ended=decoded.ended))
        return " ".join(part for part in (prefix, text) if part)


@dataclass(frozen=True, slots=True)
class TargetPlan:
    """How one session translates into one target language: the route and the runnable
    backends. ``final`` is ``None`` when the route's final is Whisper-translate."""

    route: TranslationRoute
    draft: PooledTranslator | None
    final: PooledTranslator | None


class TranslatorProvider(Protocol):
    """Loads translation backends and gives the runnable plan of a route (the process's
    :class:`models.translators.Translators`). :meth:`plan` blocks (it starts Apertium
    chains, loads CTranslate2 models): call it in a worker thread."""

    def plan(self, route: TranslationRoute) -> TargetPlan: ...
