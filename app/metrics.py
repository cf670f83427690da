"""``GET /metrics``: the pipeline's measurements in Prometheus text format.

Histograms are fed as things happen (:class:`PrometheusObserver`); gauges are read from the
live objects at scrape time (:class:`LiveCollector`), so nothing is double-counted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.requests import Request
from starlette.responses import Response

from engine.events import Caption
from engine.session import Session
from engine.store.base import SESSION_STATES

if TYPE_CHECKING:
    from app.services import Services

LATENCY_BUCKETS = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 10.0, 20.0)
CALL_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0)


class PrometheusObserver:
    """An :class:`engine.telemetry.Observer` that records into a registry."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._caption_latency = Histogram(
            "interp_caption_latency_seconds",
            "Seconds from the audio's arrival (source) or the source caption (translation) "
            "to a caption's publication",
            ["kind", "state"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._model_call = Histogram(
            "interp_model_call_seconds",
            "Seconds one call into a model or the store took, by worker pool "
            "(asr: one recognition step or refine pass; mt-*: one translation)",
            ["pool"],
            buckets=CALL_BUCKETS,
            registry=registry,
        )
        self._first_audio = Histogram(
            "interp_first_audio_seconds",
            "Seconds from a final translation reaching the speech stage to its first spoken "
            "audio being published (includes waiting for the previous sentence to play)",
            ["lang"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._errors = Counter(
            "interp_errors",
            "Errors a session turned into an error event, by kind",
            ["kind"],
            registry=registry,
        )
        self._captions = Counter(
            "interp_captions", "Captions published", ["kind", "state"], registry=registry
        )

    def caption(self, caption: Caption, latency: float | None) -> None:
        kind = "source" if caption.source else "translation"
        self._captions.labels(kind, caption.state).inc()
        if latency is not None:
            self._caption_latency.labels(kind, caption.state).observe(latency)

    def model_call(self, pool: str, seconds: float) -> None:
        self._model_call.labels(pool).observe(seconds)

    def first_audio(self, lang: str, seconds: float) -> None:
        self._first_audio.labels(lang).observe(seconds)

    def error(self, kind: str) -> None:
        self._errors.labels(kind).inc()


class LiveCollector(Collector):
    """Gauges read from the running services at scrape time."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def collect(self) -> Iterator[Metric]:
        services = self.services
        engine = services.loading.engine
        held = list(engine.registry) if engine is not None else []
        sessions = GaugeMetricFamily("interp_sessions", "Sessions by state", labels=["state"])
        counts = dict.fromkeys(SESSION_STATES, 0)
        listeners = 0
        lag = 0.0
        shed = 0
        dropped = 0
        stale = 0
        for session in held:
            counts[session.state] = counts.get(session.state, 0) + 1
            listeners += services.hub.listener_count(session.code)
            for stream in session.live_streams:
                lag = max(lag, stream.recognizer.backlog)
                shed = max(shed, int(stream.shed))
                dropped += stream.recognizer.skipped_drafts
            for translator in session.translators.values():
                stale += translator.stats.drafts_stale + translator.stats.drafts_late
        for state, value in counts.items():
            sessions.add_metric([state], value)
        yield sessions
        yield GaugeMetricFamily("interp_listeners", "Connected listeners", value=listeners)
        yield GaugeMetricFamily(
            "interp_lag_seconds", "Largest recognition backlog behind real time", value=lag
        )
        yield GaugeMetricFamily(
            "interp_shedding_level",
            "Highest shedding level of a live stream: 0 none, 1 context, 2 refine beam, "
            "3 drafts (engine/recognition/shedding.py)",
            value=shed,
        )
        pending = GaugeMetricFamily(
            "interp_worker_queue_depth",
            "Calls waiting or running per worker pool",
            labels=["pool"],
        )
        load = GaugeMetricFamily(
            "interp_worker_load",
            "Calls in flight per thread of each worker pool, averaged over a few seconds "
            "(engine/workers.py, Load: calls wait for threads as a rule near 1 and above)",
            labels=["pool"],
        )
        tenants = GaugeMetricFamily(
            "interp_worker_tenants",
            "Streams holding each worker pool (engine/workers.py, Tenants: more than its "
            "threads and the streams shed context)",
            labels=["pool"],
        )
        for pool in services.workers:
            pending.add_metric([pool.name], pool.pending)
            load.add_metric([pool.name], pool.load())
            tenants.add_metric([pool.name], pool.tenants)
        yield pending
        yield load
        yield tenants
        yield GaugeMetricFamily(
            "interp_listener_queue_depth",
            "Deepest listener queue",
            value=services.hub.deepest_queue(),
        )
        drafts = CounterMetricFamily(
            "interp_dropped_drafts",
            "Drafts not delivered because newer ones replaced them",
            labels=["where"],
        )
        drafts.add_metric(["listener_queue"], services.hub.replaced_drafts)
        drafts.add_metric(["recognizer_skipped"], dropped)
        drafts.add_metric(["translation_stale"], stale)
        yield drafts
        yield from _speech_metrics(held)


def _speech_metrics(held: list[Session]) -> Iterator[Metric]:
    """Spoken translation, summed over sessions, by language."""
    pieces = CounterMetricFamily(
        "interp_speech_pieces", "Pieces of speech synthesised and sent", labels=["lang"]
    )
    seconds = CounterMetricFamily(
        "interp_speech_audio_seconds", "Seconds of speech synthesised", labels=["lang"]
    )
    skipped = CounterMetricFamily(
        "interp_speech_skipped",
        "Pieces of speech skipped to keep pace with the speaker",
        labels=["lang"],
    )
    fallback = CounterMetricFamily(
        "interp_speech_fallback_pieces",
        "Pieces spoken by the fast fallback voice because the natural voice fell behind",
        labels=["lang"],
    )
    stalls = CounterMetricFamily(
        "interp_speech_stalls",
        "Natural-voice calls given up on because the listener would have waited too long "
        "(the fallback spoke their piece)",
        labels=["lang"],
    )
    foreseen = CounterMetricFamily(
        "interp_speech_foreseen_pieces",
        "Sentence leads synthesised ahead from a translated draft, and how many a final spoke",
        labels=["lang", "outcome"],
    )
    totals: dict[str, list[float]] = {}
    for session in held:
        if session.speaker is None:
            continue
        for lang, stats in session.speaker.stats.items():
            row = totals.setdefault(lang, [0.0] * 7)
            row[0] += stats.pieces
            row[1] += stats.audio_seconds
            row[2] += stats.skipped
            row[3] += stats.fallback_pieces
            row[4] += stats.foreseen_spoken
            row[5] += stats.foreseen - stats.foreseen_spoken
            row[6] += stats.stalls
    for lang, (n, audio, skips, fell_back, used, unused, given_up) in sorted(totals.items()):
        pieces.add_metric([lang], n)
        seconds.add_metric([lang], audio)
        skipped.add_metric([lang], skips)
        fallback.add_metric([lang], fell_back)
        stalls.add_metric([lang], given_up)
        foreseen.add_metric([lang, "spoken"], used)
        foreseen.add_metric([lang, "unused"], unused)
    yield pieces
    yield seconds
    yield skipped
    yield fallback
    yield stalls
    yield foreseen


async def metrics_endpoint(request: Request) -> Response:
    registry: CollectorRegistry = request.state.metrics_registry
    return Response(generate_latest(registry), media_type="text/plain; version=0.0.4")
