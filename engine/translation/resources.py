"""The translation backends a process has, as one typed port for the session factory, and
how a session's translation stage is built from it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.recognition.asr import PromptedTranscriber
from engine.translation.backends import TargetPlan, TranslatorProvider, whisper_translate
from engine.translation.config import TranslationConfig
from engine.translation.routes import RouteTable
from engine.translation.stage import Publish, SessionTranslator
from engine.workers import WorkerPool


@dataclass(frozen=True, slots=True)
class Translation:
    """Routes, the provider that loads their backends, and where Whisper-translate runs."""

    routes: RouteTable
    provider: TranslatorProvider
    setup_pool: WorkerPool
    """Where plans are made: making one may start an Apertium chain or load a model."""
    speech_model: PromptedTranscriber | None
    """The multilingual Whisper model that translates speech into English (None: off)."""
    speech_pool: WorkerPool
    """The pool ``speech_model`` runs on (the recogniser's: it is the same model)."""
    config: TranslationConfig = field(default_factory=TranslationConfig)

    async def stage(self, offered: Sequence[str], publish: Publish) -> dict[str, SessionTranslator]:
        """A session's translators, by source language: one from each offered language a
        stream may speak into the others that have a route (a two-way conversation changes
        language each turn). Languages with no route out get none."""
        translators: dict[str, SessionTranslator] = {}
        for source in offered:
            plans: dict[str, TargetPlan] = {}
            for target in offered:
                route = self.routes.lookup(source, target) if target != source else None
                if route is not None:
                    plans[target] = await self.setup_pool.run(self.provider.plan, route)
            if not plans:
                continue
            speech = drafts = None
            if self.speech_model is not None and any(p.route.speech_final for p in plans.values()):
                speech = whisper_translate(
                    self.speech_model,
                    self.speech_pool,
                    source,
                    full_window=self.config.speech_finals_full_window,
                )
                if self.config.speech_drafts:
                    drafts = whisper_translate(
                        self.speech_model, self.speech_pool, source, beam_size=1, behind=True
                    )
            translators[source] = SessionTranslator(
                source,
                publish,
                plans,
                whisper_translate=speech,
                whisper_drafts=drafts,
                config=self.config,
            )
        return translators
