"""The translation benchmark: text quality of the Apertium routes, speech-to-translation
quality and latency through the real server.

Order of work, so that the parts never compete for the CPU: (1) FLORES-200 text through
:class:`models.apertium.ApertiumTranslator` in this process, before any server runs; then one
server for (2) the FLEURS talks, one per spoken language, each clip of a language in one talk
with 1 s of silence between clips, and (3) an English long-form recording in real time with a
Spanish and an English listener. Every metric is computed after the replays. Definitions:
docs/metrics.md, "Translation".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import sys
import tempfile
import time
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.metrics import Distribution, Erasure, distribution
from bench.paths import EVAL, RESULTS
from bench.recordings import EVAL_LONGFORM_EN, Recording, load_recording, resolve_wavs
from bench.replay import Mode
from bench.server import ServerHandle, ServerProcess, server_arguments
from bench.translation_metrics import (
    ClipSpan,
    SegmentTiming,
    TextScore,
    clip_laal,
    clip_texts,
    heard_captions,
    segment_timings,
    source_erasure,
    text_score,
    translated,
    translation_erasure,
)
from bench.translation_replay import TalkRun, run_talk

FLORES_DIR = EVAL / "mt_text" / "flores200_devtest"
FLEURS_DIR = EVAL / "fleurs_st"
FLORES_NAMES = {
    "en": "eng_Latn",
    "es": "spa_Latn",
    "fr": "fra_Latn",
    "pt": "por_Latn",
    "it": "ita_Latn",
    "de": "deu_Latn",
    "zh": "zho_Hans",
    "ja": "jpn_Jpan",
}
"""Our language codes -> FLORES-200 file names (also the keys of FLEURS ``translations``)."""
TEXT_ROUTES: tuple[tuple[str, str], ...] = (
    ("en", "es"),
    ("es", "en"),
    ("en", "fr"),
    ("fr", "en"),
    ("en", "pt"),
    ("en", "it"),
    ("en", "ca"),
)
SPEECH_LANGUAGES: tuple[str, ...] = ("es", "de", "fr", "pt", "en")
INTO_ENGLISH: tuple[str, ...] = tuple(lang for lang in SPEECH_LANGUAGES if lang != "en")
"""The spoken languages of the X->en talks."""
ENGLISH_TARGETS: tuple[str, ...] = ("es", "fr")
LATENCY_RECORDING = "librivox_shakespeare_sonnet_001"
CLIP_GAP_S = 1.0
WHISPER_SEGMENT_MAX_S = 10.0
"""The Whisper-translate latency goal is for segments of at most this many seconds."""
FAST_REPLAY_ENV = {"INTERP_MAX_AUDIO_SPEED": "inf"}


@dataclass(frozen=True, slots=True)
class Goals:
    """Targets shown next to the measured numbers."""

    apertium_final_delay_p95_s: float = 0.150
    whisper_final_delay_p50_s: float = 1.5
    translation_erasure_max: float = 0.3


# --- part 1: text --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextRouteResult:
    """One Apertium direction on the first ``sentences`` FLORES-200 devtest sentences."""

    source: str
    target: str
    modes: tuple[str, ...]
    sentences: int
    score: TextScore | None
    """``None`` when eval/mt_text has no reference in ``target``."""
    ms_per_sentence: Distribution
    warm_up_s: float
    note: str | None = None


def flores_lines(lang: str, count: int, directory: Path = FLORES_DIR) -> list[str]:
    """The first ``count`` sentences of the FLORES-200 devtest in ``lang``."""
    path = directory / f"{FLORES_NAMES[lang]}.devtest"
    with path.open(encoding="utf-8") as lines:
        return [line.rstrip("\n") for _, line in zip(range(count), lines, strict=False)]


def has_flores(lang: str, directory: Path = FLORES_DIR) -> bool:
    return lang in FLORES_NAMES and (directory / f"{FLORES_NAMES[lang]}.devtest").is_file()


def run_text_route(
    source: str, target: str, sentences: int, directory: Path = FLORES_DIR
) -> TextRouteResult:
    """Translate the first ``sentences`` source sentences one by one through one persistent
    pipeline (warmed first), timing each call; score against the target sentences."""
    from models.apertium import ApertiumTranslator

    inputs = flores_lines(source, sentences, directory)
    with ApertiumTranslator(source, target) as translator:
        warm = translator.warm_up()
        outputs: list[str] = []
        times: list[float] = []
        for sentence in inputs:
            began = time.perf_counter()
            outputs.append(translator.translate(sentence))
            times.append((time.perf_counter() - began) * 1000.0)
        modes = tuple(translator.route.mode_names)
    score: TextScore | None = None
    note = None
    if has_flores(target, directory):
        score = text_score(outputs, flores_lines(target, sentences, directory))
    else:
        note = f"no {target} reference in eval/mt_text: speed only"
    return TextRouteResult(
        source=source,
        target=target,
        modes=modes,
        sentences=len(inputs),
        score=score,
        ms_per_sentence=distribution(times),
        warm_up_s=warm,
        note=note,
    )


# --- part 2: FLEURS talks ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FleursClip:
    """One FLEURS utterance and its human translations (keyed by our language codes)."""

    id: str
    lang: str
    wav: Path
    references: Mapping[str, str]


def fleurs_clips(directory: Path = FLEURS_DIR) -> list[FleursClip]:
    """Every clip of ``manifest.jsonl``, in file order."""
    codes = {name: code for code, name in FLORES_NAMES.items()}
    clips: list[FleursClip] = []
    with (directory / "manifest.jsonl").open(encoding="utf-8") as manifest:
        for line in manifest:
            if not line.strip():
                continue
            item = json.loads(line)
            references = {
                codes[name]: text for name, text in item["translations"].items() if name in codes
            }
            clips.append(
                FleursClip(item["id"], item["lang"], directory / item["audio"], references)
            )
    return clips


def build_talk(
    talk_id: str, clips: Sequence[FleursClip], gap_s: float = CLIP_GAP_S
) -> tuple[Recording, tuple[ClipSpan, ...]]:
    """The clips as one recording, ``gap_s`` of silence between them, and where each lies."""
    pcm = bytearray()
    spans: list[ClipSpan] = []
    rate: int | None = None
    for index, clip in enumerate(clips):
        with wave.open(str(clip.wav), "rb") as reader:
            if reader.getsampwidth() != 2 or reader.getnchannels() != 1:
                raise ValueError(f"{clip.wav} is not 16-bit mono PCM")
            if rate is None:
                rate = reader.getframerate()
            elif reader.getframerate() != rate:
                raise ValueError(f"{clip.wav}: sample rate differs from the other clips")
            if index:
                pcm += bytes(2 * round(gap_s * rate))
            start = len(pcm) // 2 / rate
            pcm += reader.readframes(reader.getnframes())
            spans.append(ClipSpan(clip.id, start, len(pcm) // 2 / rate))
    if rate is None:
        raise ValueError("a talk needs at least one clip")
    recording = Recording(
        id=talk_id, wav=clips[0].wav, reference_text="", sample_rate=rate, pcm=bytes(pcm)
    )
    return recording, tuple(spans)


# --- results of one talk, per target language ------------------------------------------------


@dataclass(frozen=True, slots=True)
class LaneResult:
    """One target language of one talk, as its listener saw it."""

    talk: str
    source: str
    target: str
    mode: Mode
    final_backend: str | None
    draft_backend: str | None
    audio_s: float
    timings: tuple[SegmentTiming, ...]
    erasure: Erasure
    source_erasure: Erasure
    """Erasure of the source captions on the same socket, for comparison."""
    missing_finals: int
    server_cores: float | None
    other_cores: float
    load_average_before: tuple[float, float, float]
    load_average_after: tuple[float, float, float]
    clips: tuple[str, ...] = ()
    hypotheses: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    score: TextScore | None = None
    laal: tuple[float | None, ...] = ()
    """Per clip, length-adaptive average lagging of the translated finals in seconds
    (:func:`bench.translation_metrics.clip_laal`); empty unless the talk was replayed in real
    time."""

    @property
    def laal_distribution(self) -> Distribution:
        return distribution(self.laal)

    @property
    def final_delay(self) -> Distribution:
        return distribution(t.final_delay_s for t in self.timings)

    @property
    def final_delay_server(self) -> Distribution:
        return distribution(t.final_delay_server_s for t in self.timings)

    @property
    def first_shown_delay(self) -> Distribution:
        return distribution(t.first_shown_delay_s for t in self.timings)

    def final_delay_upto(self, seconds: float) -> Distribution:
        """Final delay over segments whose audio lasts at most ``seconds``."""
        return distribution(t.final_delay_s for t in self.timings if t.source_seconds <= seconds)

    @property
    def segments_with_draft(self) -> int:
        return sum(t.had_draft for t in self.timings)


def measure_lane(
    run: TalkRun,
    target: str,
    routes: Mapping[tuple[str, str], Mapping[str, Any]],
    clips: Sequence[FleursClip] = (),
    spans: Sequence[ClipSpan] = (),
) -> LaneResult:
    """Metrics of the listener on ``target`` in one talk (pure)."""
    heard = heard_captions(run.listeners[target])
    route = routes.get((run.source, target), {})
    hypotheses: list[str] = []
    references: list[str] = []
    score = None
    lagging: list[float | None] = []
    if clips:
        finals = [h for h in translated(heard, target) if h.state == "final"]
        hypotheses = clip_texts(finals, spans)
        references = [clip.references[target] for clip in clips]
        score = text_score(hypotheses, references)
        if run.presenter.mode == "realtime":
            lagging = clip_laal(finals, spans, references, audio_origin(run))
    return LaneResult(
        talk=run.talk,
        source=run.source,
        target=target,
        mode=run.presenter.mode,
        final_backend=_backend_label(route.get("final")),
        draft_backend=_backend_label(route.get("draft")),
        audio_s=run.presenter.schedule.audio_seconds,
        timings=tuple(segment_timings(heard, target)),
        erasure=translation_erasure(heard, target),
        source_erasure=source_erasure(heard),
        missing_finals=run.missing_finals.get(target, 0),
        server_cores=run.cpu.server,
        other_cores=run.cpu.other,
        load_average_before=run.load_average_before,
        load_average_after=run.load_average_after,
        clips=tuple(clip.id for clip in clips),
        hypotheses=tuple(hypotheses),
        references=tuple(references),
        score=score,
        laal=tuple(lagging),
    )


def audio_origin(run: TalkRun) -> float:
    """When audio time 0 was spoken on a live microphone, on the presenter's clock: the
    first chunk is sent when its last sample would exist (real-time replay)."""
    schedule = run.presenter.schedule
    return schedule.send_times[0] - schedule.chunk_end_samples[0] / schedule.sample_rate


def _backend_label(backend: Mapping[str, str] | None) -> str | None:
    return None if not backend else f"{backend['kind']}:{backend['name']}"


# --- the run -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TranslationSettings:
    """What ``python -m bench translation`` was asked to do."""

    out: Path
    sentences: int = 300
    text_routes: tuple[tuple[str, str], ...] = TEXT_ROUTES
    speech_languages: tuple[str, ...] = SPEECH_LANGUAGES
    english_targets: tuple[str, ...] = ENGLISH_TARGETS
    clips_per_language: int | None = None
    latency_recording: Path | None = EVAL_LONGFORM_EN / f"{LATENCY_RECORDING}.wav"
    mode: Mode = "realtime"
    """Replay mode of the FLEURS talks (the long-form recording is always real time)."""
    url: str | None = None
    server_pid: int | None = None
    ready_timeout: float = 120.0
    flores_dir: Path = FLORES_DIR
    fleurs_dir: Path = FLEURS_DIR


@dataclass(frozen=True, slots=True)
class TranslationRun:
    """Every result of one benchmark run."""

    text: tuple[TextRouteResult, ...]
    speech: tuple[LaneResult, ...]
    latency: tuple[LaneResult, ...]
    talks: tuple[TalkRun, ...]
    routes: tuple[Mapping[str, Any], ...]
    server_url: str | None
    server_started: bool
    server_log: Path | None
    text_load_average: tuple[float, float, float] | None


def run_text(settings: TranslationSettings) -> list[TextRouteResult]:
    """Part 1: every requested Apertium direction on FLORES-200."""
    return [
        run_text_route(source, target, settings.sentences, settings.flores_dir)
        for source, target in settings.text_routes
    ]


async def fetch_routes(base_url: str) -> list[dict[str, Any]]:
    """``GET /api/routes``: the server's route table."""
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0) as client:
        response = await client.get("/api/routes")
    response.raise_for_status()
    routes: list[dict[str, Any]] = response.json()["routes"]
    return routes


def speech_talks(
    settings: TranslationSettings,
) -> list[tuple[str, list[FleursClip], tuple[str, ...]]]:
    """``(language, clips, targets)`` of each FLEURS talk to run."""
    clips = fleurs_clips(settings.fleurs_dir)
    talks = []
    for lang in settings.speech_languages:
        chosen = [c for c in clips if c.lang == lang][: settings.clips_per_language]
        if not chosen:
            continue
        targets = settings.english_targets if lang == "en" else ("en",)
        talks.append((lang, chosen, targets))
    return talks


async def run_speech(
    settings: TranslationSettings, server: ServerHandle
) -> tuple[list[LaneResult], list[LaneResult], list[TalkRun], list[dict[str, Any]]]:
    """Parts 2 and 3 against one server: the FLEURS talks, then the long-form talk."""
    route_list = await fetch_routes(server.base_url)
    routes = {(r["source"], r["target"]): r for r in route_list}
    speech: list[LaneResult] = []
    latency: list[LaneResult] = []
    runs: list[TalkRun] = []
    for lang, clips, targets in speech_talks(settings):
        talk_id = f"fleurs-{lang}-talk"
        recording, spans = build_talk(talk_id, clips)
        run = await run_talk(server, talk_id, recording, lang, targets, targets, settings.mode)
        runs.append(run)
        speech += [measure_lane(run, t, routes, clips, spans) for t in targets]
    if settings.latency_recording is not None:
        recording = load_recording(settings.latency_recording)
        run = await run_talk(
            server, recording.id, recording, "en", ("es",), ("es", "en"), "realtime"
        )
        runs.append(run)
        latency.append(measure_lane(run, "es", routes))
    return speech, latency, runs, route_list


async def run_translation(settings: TranslationSettings) -> TranslationRun:
    """Part 1 (no server running), then parts 2 and 3 against one server."""
    text = run_text(settings)
    text_load = os.getloadavg() if text else None
    speech: list[LaneResult] = []
    latency: list[LaneResult] = []
    runs: list[TalkRun] = []
    routes: list[dict[str, Any]] = []
    wants_server = bool(speech_talks(settings)) or settings.latency_recording is not None
    log_path: Path | None = None
    started = False
    url = settings.url
    if wants_server and settings.url is not None:
        handle = ServerHandle(settings.url.rstrip("/"), settings.server_pid)
        speech, latency, runs, routes = await run_speech(settings, handle)
    elif wants_server:
        log_path = settings.out / "server-translation.log"
        env = {**(FAST_REPLAY_ENV if settings.mode == "fast" else {})}
        with tempfile.TemporaryDirectory(prefix="bench-server-data-") as data_dir:
            server = ServerProcess(log_path, env={**env, "INTERP_DATA_DIR": data_dir})
            handle = await server.start(settings.ready_timeout)
            started, url = True, handle.base_url
            try:
                speech, latency, runs, routes = await run_speech(settings, handle)
            finally:
                await server.stop()
    return TranslationRun(
        text=tuple(text),
        speech=tuple(speech),
        latency=tuple(latency),
        talks=tuple(runs),
        routes=tuple(routes),
        server_url=url,
        server_started=started,
        server_log=log_path,
        text_load_average=text_load,
    )


# --- the command line -----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench translation", description=__doc__)
    server_arguments(parser)
    parser.add_argument(
        "--sentences",
        type=int,
        default=300,
        help="FLORES-200 devtest sentences per text route (default: %(default)s)",
    )
    parser.add_argument(
        "--routes",
        nargs="*",
        metavar="SRC-TGT",
        default=[f"{s}-{t}" for s, t in TEXT_ROUTES],
        help="Apertium directions of the text part; none to skip it (default: %(default)s)",
    )
    parser.add_argument(
        "--speech",
        nargs="*",
        metavar="LANG",
        default=list(SPEECH_LANGUAGES),
        help="FLEURS languages to speak, one talk each (X->en; en->--english-targets); none "
        "to skip (default: %(default)s)",
    )
    parser.add_argument(
        "--english-targets",
        nargs="+",
        metavar="LANG",
        default=list(ENGLISH_TARGETS),
        help="targets of the English FLEURS talk (default: %(default)s)",
    )
    parser.add_argument("--clips", type=int, help="at most this many clips per FLEURS language")
    parser.add_argument(
        "--latency-file",
        default=LATENCY_RECORDING,
        help="English long-form recording (id in --eval-dir or WAV path) replayed in real time "
        "for latency, or 'none' (default: %(default)s)",
    )
    parser.add_argument(
        "--mode",
        choices=("realtime", "fast"),
        default="realtime",
        help="replay of the FLEURS talks; fast skips the Whisper-translate latency goal",
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m bench translation [options]``: both parts, the report written and printed."""
    from bench.translation_report import write_report  # the report module builds on this one

    args = build_parser().parse_args(argv)
    routes = []
    for pair in args.routes:
        source, sep, target = pair.partition("-")
        if not sep or not source or not target:
            print(f"--routes: expected SRC-TGT, got {pair!r}", file=sys.stderr)
            return 2
        routes.append((source, target))
    latency = None
    if args.latency_file.lower() != "none":
        (latency,) = resolve_wavs([args.latency_file], args.eval_dir)
    settings = TranslationSettings(
        out=args.out,
        sentences=args.sentences,
        text_routes=tuple(routes),
        speech_languages=tuple(args.speech),
        english_targets=tuple(args.english_targets),
        clips_per_language=args.clips,
        latency_recording=latency,
        mode=args.mode,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
    )
    run = asyncio.run(run_translation(settings))
    command = shlex.join(["python", "-m", "bench", "translation", *argv])
    json_path, md_path, markdown = write_report(run, settings, Goals(), command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0
