"""The process's translation backends: :class:`Translators` loads each Apertium chain and
CTranslate2 model once and gives each its own bounded worker pool (the engine's
:class:`engine.translation.backends.TranslatorProvider`); :func:`installed_routes` builds the
route table from what is installed and configured."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from engine.translation.backends import PooledTranslator, TargetPlan, Translator
from engine.translation.routes import Backend, RouteTable, TranslationRoute
from engine.workers import Workers
from models.apertium import ApertiumBackend
from models.apertium_modes import available_routes
from models.catalog import ModelError
from models.ct2_translator import CT2Model, inspect_model
from models.route_quality import measured_quality

log = logging.getLogger(__name__)


def installed_routes(
    *, apertium: bool, ct2: Mapping[str, str], whisper_translate: str | None
) -> RouteTable:
    """The translation routes this server can serve: Apertium's installed directions (when
    ``apertium``), the user's CTranslate2 models (``{"en-de": path}`` or ``{"*": path}``),
    and speech translation into English by the named multilingual Whisper model."""
    languages: dict[str, frozenset[str]] = {}
    problems: list[str] = []
    for key, path in ct2.items():
        try:
            languages[path] = inspect_model(path).languages
        except (ModelError, ValueError, KeyError) as exc:
            log.warning("CTranslate2 model %s for %r not used: %s", path, key, exc)
            problems.append(f"{key}: {path}: {exc}")
    return RouteTable.build(
        apertium=available_routes() if apertium else [],
        ct2={key: path for key, path in ct2.items() if path in languages},
        ct2_languages=languages,
        whisper_translate=whisper_translate,
        problems=problems,
        measured=measured_quality(),
    )


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

    def plan(self, route: TranslationRoute) -> TargetPlan:
        """The plan for ``route``; backends load on first use and are shared afterwards."""
        draft = (
            self._pooled(route.draft_backend, route, draft=True) if route.draft_backend else None
        )
        final = (
            None if route.speech_final else self._pooled(route.final_backend, route, draft=False)
        )
        return TargetPlan(route, draft, final)

    def _pooled(
        self, backend: Backend, route: TranslationRoute, *, draft: bool
    ) -> PooledTranslator:
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
