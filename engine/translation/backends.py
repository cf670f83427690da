"""Machine translation: the Translator interface, its backends, and how a session reaches them.

Draft-then-refine, as for recognition: each draft update of a segment is translated fast
(coalesced, newest wins), each final once with the route's best backend and context. The parts:

- :class:`Translator` (this module): one direction of one backend, synchronous, called in a
  worker thread; adapters for Apertium (:class:`ApertiumBackend`) and CTranslate2
  (:class:`models.ct2_translator.CT2Translator`); Whisper-translate finals come from the
  segment's audio through :func:`whisper_translate`.
- :mod:`engine.translation.routes`: which backend serves which pair (:class:`RouteTable`).
- :class:`Translators` (this module): loads each backend once per process, gives each its own
  bounded :class:`WorkerPool`, and builds the :class:`TargetPlan` of a route.
- :mod:`engine.translation.stage`: :class:`SessionTranslator`, one per session.
- :mod:`engine.translation.text`: stabilisation of drafts and the glossary (pure).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.recognition.asr import DecodeOptions, Transcriber
from engine.recognition.policy import guard_repetitions, join_words
from engine.translation.routes import Backend, Route
from engine.workers import WorkerPool, Workers
from models.apertium import ApertiumTranslator
from models.ct2_translator import CT2Model

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


class ApertiumBackend:
    """:class:`models.apertium.ApertiumTranslator` as a :class:`Translator` (context unused:
    Apertium is rule-based and sentence by sentence)."""

    passes_placeholders = True

    def __init__(self, translator: ApertiumTranslator) -> None:
        self._translator = translator
        self.name = "apertium:" + "+".join(translator.route.mode_names)

    @classmethod
    def open(cls, source: str, target: str) -> ApertiumBackend:
        """Start (lazily) the pipelines for ``source -> target``; raises
        :class:`models.apertium.ApertiumUnavailable` if no installed route connects them."""
        return cls(ApertiumTranslator(source, target))

    def translate(self, text: str, context: str | None = None) -> str:
        return self._translator.translate(text)

    def warm_up(self) -> float:
        return self._translator.warm_up()

    def close(self) -> None:
        self._translator.close()


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


WhisperTranslate = Callable[[np.ndarray, "str | None"], Awaitable[str]]
"""``(segment audio at 16 kHz, prompt) -> English text``: speech translation of one final."""


def whisper_translate(
    transcriber: Transcriber,
    pool: WorkerPool,
    source: str,
    *,
    beam_size: int = 5,
    max_tokens_per_second: float = 8.0,
) -> WhisperTranslate:
    """A :data:`WhisperTranslate` for speech in ``source`` with a multilingual Whisper model
    (``task="translate"``, beam 5, temperature 0: MODELS.md), run on ``pool`` (the ASR pool:
    the model is the same one the session recognises with)."""

    async def translate(audio: np.ndarray, prompt: str | None) -> str:
        seconds = len(audio) / 16000
        options = DecodeOptions(
            language=source,
            task="translate",
            beam_size=beam_size,
            prompt=prompt or None,
            word_timestamps=False,
            # Bounds every decode; loops are cut here rather than after the fact.
            max_new_tokens=int(max_tokens_per_second * seconds) + 8,
        )
        words = await pool.run(
            transcriber.transcribe, np.ascontiguousarray(audio, dtype=np.float32), options
        )
        # The token bound stops a loop; the guard cuts what it had written by then ("he had
        # to pass by a timebreak. 1 1 1 1 ...", a FLEURS clip).
        return join_words(guard_repetitions(words))

    return translate


@dataclass(frozen=True, slots=True)
class TargetPlan:
    """How one session translates into one target language: the route and the runnable
    backends. ``final`` is ``None`` when the route's final is Whisper-translate."""

    route: Route
    draft: PooledTranslator | None
    final: PooledTranslator | None


class Translators:
    """Every translation backend of the process, each loaded once, each on its own pool.

    :meth:`plan` blocks (it starts Apertium chains and loads CTranslate2 models): call it from
    the lifespan or a worker thread, never on the event loop.
    """

    def __init__(
        self,
        workers: Workers,
        *,
        ct2_compute_type: str = "int8",
        ct2_threads: int = 1,
        ct2_final_beam: int = 4,
        max_pending: int = 64,
    ) -> None:
        self._workers = workers
        self._ct2_compute_type = ct2_compute_type
        self._ct2_threads = ct2_threads
        self._ct2_final_beam = ct2_final_beam
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._apertium: dict[tuple[str, str], ApertiumBackend] = {}
        self._ct2_models: dict[str, CT2Model] = {}

    def plan(self, route: Route) -> TargetPlan:
        """The plan for ``route``; backends load on first use and are shared afterwards."""
        draft = (
            self._pooled(route.draft_backend, route, draft=True) if route.draft_backend else None
        )
        final = (
            None if route.speech_final else self._pooled(route.final_backend, route, draft=False)
        )
        return TargetPlan(route, draft, final)

    def _pooled(self, backend: Backend, route: Route, *, draft: bool) -> PooledTranslator:
        translator: Translator
        with self._lock:
            if backend.kind == "apertium":
                key = (route.source, route.target)
                if key not in self._apertium:
                    self._apertium[key] = ApertiumBackend.open(*key)
                translator = self._apertium[key]
            elif backend.kind == "ct2":
                if backend.ref not in self._ct2_models:
                    self._ct2_models[backend.ref] = CT2Model(
                        backend.ref,
                        compute_type=self._ct2_compute_type,
                        intra_threads=self._ct2_threads,
                    )
                translator = self._ct2_models[backend.ref].pair(
                    route.source, route.target, beam_size=1 if draft else self._ct2_final_beam
                )
            else:
                raise ValueError(f"{backend.label} is not a text backend")
        pool = self._workers.pool(
            f"mt-{translator.name if backend.kind == 'apertium' else backend.label}",
            max_pending=self._max_pending,
        )
        return PooledTranslator(translator, pool)

    def warm_up(self) -> dict[str, float]:
        """Push one sentence through every loaded backend; seconds each took."""
        with self._lock:
            backends: list[ApertiumBackend | CT2Model] = [
                *self._apertium.values(),
                *self._ct2_models.values(),
            ]
        return {backend.name: backend.warm_up() for backend in backends}

    def close(self) -> None:
        """Stop every Apertium chain and unload every CT2 model."""
        with self._lock:
            for apertium in self._apertium.values():
                apertium.close()
            for model in self._ct2_models.values():
                model.close()
            self._apertium.clear()
            self._ct2_models.clear()
