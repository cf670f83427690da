"""What the lifespan builds and every route uses: one object, passed through ``app.state``."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from app.nodes import backends, follow_other_nodes
from app.settings import Settings
from engine import languages
from engine.delivery.hub import Hub
from engine.recognition.recognizer import RecognizerConfig
from engine.registry import SessionRegistry
from engine.session import Pipeline, Session
from engine.speech.speaker import SessionSpeaker, Synthesizer
from engine.store.base import SessionStore
from engine.telemetry import NullObserver, Observer
from engine.translation.backends import TargetPlan, Translators, whisper_translate
from engine.translation.routes import RouteTable
from engine.translation.stage import SessionTranslator
from engine.workers import Workers
from models.apertium import available_routes
from models.catalog import resolve_whisper, silero_vad_path
from models.silero import SileroModel
from models.voices import VoiceBank, voice_plan
from models.whisper import FasterWhisperTranscriber

log = logging.getLogger(__name__)

TranscriberFactory = Callable[[str, Settings], object]
"""Builds the transcriber for a model setting; tests inject fakes through it."""


def whisper_factory(spec: str, settings: Settings) -> object:
    resolved = resolve_whisper(spec, settings.cache_dir)
    return FasterWhisperTranscriber(
        resolved,
        cpu_threads=settings.cpu_threads,
        encoder_threads=settings.encoder_threads,
        short_window=settings.short_window,
    )


@dataclass
class Services:
    settings: Settings
    store: SessionStore
    hub: Hub
    workers: Workers
    pipeline: Pipeline
    registry: SessionRegistry
    translators: Translators
    routes: RouteTable = field(default_factory=lambda: RouteTable(()))
    voices: VoiceBank = field(default_factory=lambda: VoiceBank({}))
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    load_error: str | None = None

    def recognition_languages(self) -> list[languages.Language]:
        """Languages a presenter may speak with the loaded models."""
        loaded = self.pipeline.transcribers
        if "*" in loaded:
            return [lang for lang in languages.all_languages() if lang.whisper]
        return [languages.get(code) for code in loaded if languages.is_known(code)]

    def can_recognise(self, code: str) -> bool:
        loaded = self.pipeline.transcribers
        if code in loaded:
            return True
        return "*" in loaded and languages.is_known(code) and bool(languages.get(code).whisper)

    def translation_targets(self, source: str) -> list[str]:
        """Languages a session speaking ``source`` may offer besides its own."""
        return self.routes.targets(source)

    async def add_stages(self, session: Session) -> None:
        """Give a session this process takes on its translation and speech stages."""
        await self.make_translator(session)
        self.make_speaker(session)

    def make_speaker(self, session: Session) -> None:
        """Speech for ``session`` in every language a voice speaks (voices load on first use,
        in the ``tts`` pool: the one thread every synthesiser runs in)."""
        if not self.voices.plan:
            return
        pool = self.workers.pool("tts", threads=1, max_pending=64)
        bank = self.voices

        async def voice(lang: str) -> Synthesizer | None:
            return await pool.run(bank.load, lang)

        session.speaker = SessionSpeaker(
            voice,
            pool.run,
            session.publish,
            spoken=bank.languages(),
            on_first_audio=self.pipeline.observer.first_audio,
        )

    async def make_translator(self, session: Session) -> None:
        """Give ``session`` a translator from each offered language a stream may speak into
        the others that have a route: the session's source language into its targets, and
        each target back into the rest (a two-way conversation changes language each turn).
        Plans load their backends on first use, so they are made in a worker thread."""
        record = session.record
        offered = [record.source_language, *record.target_languages]
        setup = self.workers.pool("mt-setup")
        for source in offered:
            plans: dict[str, TargetPlan] = {}
            for target in offered:
                route = self.routes.lookup(source, target) if target != source else None
                if route is not None:
                    plans[target] = await setup.run(self.translators.plan, route)
            if not plans:
                continue
            speech = None
            base = self.pipeline.transcribers.get("*")
            if any(p.route.speech_final for p in plans.values()) and base is not None:
                speech = whisper_translate(
                    base,
                    self.pipeline.asr_pool,
                    source,  # type: ignore[arg-type]
                )
            session.translators[source] = SessionTranslator(
                source, session.publish, plans, whisper_translate=speech
            )


def recognizer_defaults(settings: Settings) -> RecognizerConfig:
    """The recogniser's settings with ``INTERP_RECOGNIZER`` overrides, typed and checked."""
    config = replace(RecognizerConfig(), refine=settings.refine)
    known = {f.name: f for f in fields(RecognizerConfig)}
    changes: dict[str, object] = {}
    for name, text in settings.recognizer.items():
        if name not in known or name == "language":
            raise ValueError(f"INTERP_RECOGNIZER: unknown field {name!r}")
        current = getattr(config, name)
        if isinstance(current, bool):
            changes[name] = text.lower() in ("1", "true", "yes")
        else:
            changes[name] = type(current)(text)
    return replace(config, **changes)  # type: ignore[arg-type]


def build_services(settings: Settings, observer: Observer | None = None) -> Services:
    store, hub = backends(settings)
    observer = observer or NullObserver()
    workers = Workers(on_call=observer.model_call)

    base_config = recognizer_defaults(settings)

    def recognizer_config(language: str) -> RecognizerConfig:
        return replace(base_config, language=language)

    pipeline = Pipeline(
        transcribers={},
        vad_model=None,  # type: ignore[arg-type]  # set by load_models
        asr_pool=workers.pool("asr", threads=1, max_pending=32),
        store_pool=workers.pool("store", threads=1, max_pending=1024),
        recognizer_config=recognizer_config,
        observer=observer,
    )
    registry = SessionRegistry(store, hub, pipeline, max_sessions=settings.max_sessions)
    services = Services(settings, store, hub, workers, pipeline, registry, Translators(workers))
    if settings.speech:
        services.voices = VoiceBank(voice_plan(settings.voices))
    registry.on_session = services.add_stages
    follow_other_nodes(hub, registry)
    return services


def build_routes(settings: Settings, multilingual_loaded: bool) -> RouteTable:
    """The translation routes this server can serve with what is installed and configured."""
    apertium_routes = available_routes() if settings.apertium else []
    speech = "base" if settings.whisper_translate and multilingual_loaded else None
    return RouteTable.build(
        apertium=apertium_routes, ct2=settings.ct2_models, whisper_translate=speech
    )


async def load_models(services: Services, factory: TranscriberFactory) -> None:
    """Load, verify and warm every model once, in the model's own worker thread."""
    settings = services.settings
    pool = services.pipeline.asr_pool
    try:
        services.pipeline.vad_model = await pool.run(SileroModel, silero_vad_path())
        specs = dict(settings.asr_models)
        if not settings.load_multilingual:
            specs.pop("*", None)
        loaded: dict[str, object] = {}
        by_spec: dict[str, object] = {}
        for language, spec in specs.items():
            if spec not in by_spec:
                log.info("loading recognition model %s", spec)
                model = await pool.run(factory, spec, settings)
                if settings.warm_models and hasattr(model, "warm"):
                    await pool.run(model.warm)
                by_spec[spec] = model
            loaded[language] = by_spec[spec]
        services.pipeline.transcribers = loaded
        services.routes = await services.workers.pool("mt-setup").run(
            build_routes, settings, "*" in loaded
        )
        if settings.warm_models and "en" in services.voices.plan:
            tts = services.workers.pool("tts", threads=1, max_pending=64)
            english = await tts.run(services.voices.load, "en")
            if english is not None:
                await tts.run(english.warm)
        # Models and start-up objects live for the whole process: keep the cyclic collector
        # from rescanning them (full collections paused the loop for up to 0.8 s under load).
        gc.collect()
        gc.freeze()
        services.ready.set()
        log.info("models ready: %s", {k: getattr(v, "name", v) for k, v in loaded.items()})
    except Exception as exc:
        services.load_error = f"{type(exc).__name__}: {exc}"
        log.exception("loading models failed")
        raise
