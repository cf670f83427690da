"""What the lifespan builds and every route uses.

:class:`Services` exists from start-up: the settings, the store and hub, the worker pools. The
models load in the background; once they are loaded and warmed, :func:`load_engine` wires
them into the engine (:class:`Engine`: the session registry and the presenting API) and the
routes that need it start answering (before that they answer 503, or close with 1013).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, fields, replace
from typing import TypeVar

from app.nodes import Backends
from app.push_http import HttpPoster
from app.ratelimit import SlidingWindowLimit
from app.settings import Settings, SettingsError, parse_flag
from engine.access import ListenerAccess
from engine.delivery.hub import Hub
from engine.delivery.push import PushPolicy
from engine.editing import Editing
from engine.factory import SessionFactory, StagePorts
from engine.presenting import Presenting
from engine.recognition.asr import LanguageIdentifier, PromptedTranscriber, Transcriber
from engine.recognition.config import RecognizerConfig
from engine.recognition.resources import Recognition
from engine.registry import SessionRegistry
from engine.session import SessionPorts
from engine.speech.config import PaceConfig
from engine.speech.resources import Speech
from engine.speech.voice import VoiceKind
from engine.telemetry import Observer
from engine.translation.config import TranslationConfig
from engine.translation.resources import Translation
from engine.translation.routes import RouteTable
from engine.workers import Below, Workers
from models.catalog import default_cache_dir, resolve_whisper, silero_vad_path
from models.silero import SileroModel
from models.translators import Translators, installed_routes
from models.voices import VoiceBank, espeak_fallbacks, voice_plan
from models.whisper import FasterWhisperTranscriber

log = logging.getLogger(__name__)

YOUNG_OBJECTS_PER_COLLECTION = 10_000
"""How many new container objects the cyclic collector lets in before it collects the young
generation (CPython's default is 700). Sending one event to many listeners keeps a few
objects per send alive for a moment; collected that often, they were promoted as if long
lived, and that brought on full collections: pauses of the event loop that held an event
back from every listener. docs/metrics.md, "Fan-out / Collector pauses"."""


def settle_collector() -> None:
    """Once the models are loaded: move everything alive into the collector's permanent
    generation, so full collections never rescan the models and start-up objects, and
    collect the young generation less often (:data:`YOUNG_OBJECTS_PER_COLLECTION`)."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS_PER_COLLECTION, middle, oldest)


@dataclass(frozen=True, slots=True)
class RecognitionModel:
    """A loaded recognition model: what transcribes, what identifies the language and what
    translates speech into English (the multilingual model only), and how to warm it."""

    transcriber: Transcriber
    identifier: LanguageIdentifier | None = None
    warm: Callable[[], None] | None = None
    translates: PromptedTranscriber | None = None


TranscriberFactory = Callable[[str, Settings], RecognitionModel]
"""Loads the recognition model for a model setting; tests inject fakes through it."""


def whisper_factory(spec: str, settings: Settings) -> RecognitionModel:
    resolved = resolve_whisper(spec, settings.cache_dir)
    model = FasterWhisperTranscriber(
        resolved,
        cpu_threads=settings.cpu_threads,
        workers=settings.asr_workers,
        encoder_threads=settings.encoder_threads,
        short_window=settings.short_window,
    )
    multilingual = model if model.multilingual else None
    return RecognitionModel(model, multilingual, model.warm, translates=multilingual)


class NotReady(Exception):
    """The models are still loading (or failed to load): try again shortly."""


@dataclass(frozen=True, slots=True)
class Engine:
    """What a process serves once its models are loaded."""

    recognition: Recognition
    routes: RouteTable
    voices: Mapping[str, VoiceKind]
    """The kind of voice each spoken language has (``natural`` or ``fast``)."""
    registry: SessionRegistry
    presenting: Presenting
    editing: Editing
    access: ListenerAccess
    """Private sessions: passcodes and listener tokens."""

    @property
    def spoken(self) -> frozenset[str]:
        """Languages a voice speaks."""
        return frozenset(self.voices)


@dataclass(slots=True)
class Loading:
    """The engine as it loads: ``engine`` once ready, ``error`` if loading failed."""

    done: asyncio.Event = field(default_factory=asyncio.Event)
    engine: Engine | None = None
    error: str | None = None

    def ready(self, engine: Engine) -> None:
        if self.engine is not None:
            raise RuntimeError("the engine is loaded once")
        self.engine = engine
        self.done.set()

    def failed(self, error: str) -> None:
        self.error = error


@dataclass(frozen=True, slots=True)
class Services:
    settings: Settings
    backends: Backends
    workers: Workers
    observer: Observer
    translators: Translators
    voices: VoiceBank | None
    creation_limit: SlidingWindowLimit
    passcode_guesses: SlidingWindowLimit
    """Wrong passcodes per client address (``POST .../join``)."""
    poster: HttpPoster
    """Where captions pushed out go (YouTube, Zoom): one HTTP client, closed at shutdown."""
    loading: Loading = field(default_factory=Loading)

    @property
    def hub(self) -> Hub:
        return self.backends.hub

    def engine(self) -> Engine:
        """The loaded engine; :class:`NotReady` while the models load."""
        engine = self.loading.engine
        if engine is None:
            raise NotReady(
                "models are still loading; try again shortly"
                if self.loading.error is None
                else f"models failed to load: {self.loading.error}"
            )
        return engine

    @property
    def ready(self) -> bool:
        return self.loading.engine is not None


def recognizer_defaults(settings: Settings) -> RecognizerConfig:
    """The recogniser's settings with ``INTERP_RECOGNIZER`` overrides, typed and checked."""
    config = replace(RecognizerConfig(), refine=settings.refine)
    return _overridden(config, settings.recognizer, "INTERP_RECOGNIZER", frozenset({"language"}))


def _warmed(done: Future[None]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.error("warming the voices failed", exc_info=done.exception())


def pace_defaults(settings: Settings) -> PaceConfig:
    """The speech stage's rules with ``INTERP_PACE`` overrides, typed and checked."""
    return _overridden(PaceConfig(), settings.pace, "INTERP_PACE")


Config = TypeVar("Config", RecognizerConfig, PaceConfig)


def _overridden(
    config: Config, overrides: Mapping[str, str], variable: str, fixed: frozenset[str] = frozenset()
) -> Config:
    """``config`` with the fields named in ``overrides`` replaced, each parsed as its type;
    :class:`SettingsError` naming ``variable`` for an unknown field or a value of the wrong
    type."""
    known = {f.name for f in fields(config)}
    changes: dict[str, object] = {}
    for name, text in overrides.items():
        if name not in known or name in fixed:
            raise SettingsError(f"{variable}: unknown field {name!r}")
        current = getattr(config, name)
        parse = parse_flag if isinstance(current, bool) else type(current)
        try:
            changes[name] = parse(text)
        except ValueError as error:
            raise SettingsError(f"{variable}: {name}={text!r}: {error}") from error
    return replace(config, **changes)  # type: ignore[arg-type]


def check_settings(settings: Settings) -> None:
    """Refuse now what loading the engine would refuse later (:class:`SettingsError`): the
    recogniser's and the speech stage's overrides (``INTERP_RECOGNIZER``, ``INTERP_PACE``)."""
    recognizer_defaults(settings)
    pace_defaults(settings)


def build_services(settings: Settings, backends: Backends, observer: Observer) -> Services:
    """Everything that exists before the models load."""
    voices: VoiceBank | None = None
    if settings.speech:
        plan = voice_plan(settings.voices, natural=settings.natural_voices)
        voices = VoiceBank(
            plan,
            espeak_fallbacks(plan),
            cache_dir=settings.cache_dir or default_cache_dir(),
            threads=settings.tts_threads,
        )
    workers = Workers(on_call=observer.model_call)
    return Services(
        settings=settings,
        backends=backends,
        workers=workers,
        observer=observer,
        translators=Translators(workers),
        voices=voices,
        creation_limit=SlidingWindowLimit(settings.session_create_per_minute, 60.0),
        passcode_guesses=SlidingWindowLimit(settings.passcode_guesses_per_minute, 60.0),
        poster=HttpPoster(),
    )


async def load_engine(services: Services, factory: TranscriberFactory) -> Engine:
    """Load, verify and warm every model once, in the model's own worker thread; then wire
    them into the engine."""
    settings = services.settings
    workers = services.workers
    asr = workers.pool("asr", threads=settings.asr_workers, max_pending=32)
    store_pool = workers.pool("store", threads=1, max_pending=1024)
    setup = workers.pool("mt-setup")
    vad = await asr.run(SileroModel, silero_vad_path())
    specs = dict(settings.asr_models)
    if not settings.load_multilingual:
        specs.pop("*", None)
    loaded: dict[str, RecognitionModel] = {}
    by_spec: dict[str, RecognitionModel] = {}
    for language, spec in specs.items():
        if spec not in by_spec:
            log.info("loading recognition model %s", spec)
            model = await asr.run(factory, spec, settings)
            if settings.warm_models and model.warm is not None:
                await asr.run(model.warm)
            by_spec[spec] = model
        loaded[language] = by_spec[spec]
    base_config = recognizer_defaults(settings)
    multilingual = loaded.get("*")
    recognition = Recognition(
        transcribers={language: model.transcriber for language, model in loaded.items()},
        vad=vad,
        pool=asr,
        config=lambda language: replace(base_config, language=language),
        identifier=None if multilingual is None else multilingual.identifier,
    )
    speech_model = multilingual.translates if multilingual and settings.whisper_translate else None
    speech_translation = speech_model is not None
    routes = await setup.run(
        lambda: installed_routes(
            apertium=settings.apertium,
            ct2=settings.ct2_models,
            whisper_translate="base" if speech_translation else None,
        )
    )
    translation = Translation(
        routes=routes,
        provider=services.translators,
        setup_pool=setup,
        speech_model=speech_model,
        speech_pool=asr,
        config=TranslationConfig(
            speech_drafts=settings.speech_drafts,
            speech_finals_full_window=settings.speech_finals_full_window,
        ),
    )
    speech: Speech | None = None
    voices = services.voices
    if voices is not None and voices.plan:
        below = Below(nice=settings.tts_nice, idle=settings.tts_idle)
        tts = workers.pool("tts", threads=1, max_pending=64, below=below)
        fast = workers.pool("tts-fast", threads=1, max_pending=64)
        speech = Speech(voices, tts, fast, pace_defaults(settings))
        if settings.warm_models:
            # In the background: synthesis runs below everything else, so on a busy machine
            # warming could hold readiness for minutes; the first listener's voice waits for
            # it in the pool instead.
            tts.start(voices.warm).add_done_callback(_warmed)
    backends = services.backends
    session_factory = SessionFactory(
        SessionPorts(backends.store, store_pool, backends.hub, recognition, services.observer),
        StagePorts(
            translation=translation,
            speech=speech,
            poster=services.poster,
            push_policy=PushPolicy(timeout_s=settings.push_timeout_s),
        ),
    )
    registry = SessionRegistry(
        session_factory,
        max_sessions=settings.max_sessions,
        ended_grace_s=settings.ended_grace_s,
    )
    presenting = Presenting(
        registry,
        recognition,
        backends.hub,
        limits=settings.limits,
        max_live_streams=settings.max_live_streams,
    )
    settle_collector()
    log.info("models ready: %s", {k: m.transcriber.name for k, m in loaded.items()})
    kinds = voices.kinds() if speech is not None and voices is not None else {}
    editing = Editing(backends.store, store_pool, backends.hub)
    passcodes = workers.pool("passcode", threads=1, max_pending=32)
    access = ListenerAccess(backends.store, store_pool, passcodes)
    return Engine(recognition, routes, kinds, registry, presenting, editing, access)
