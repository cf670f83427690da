"""The live-captions benchmark: replay recordings to the server, then measure what came back.

Order of work, so that the bench never competes with the server for the CPU while audio is
being replayed: offline reference decodes first (cached), then the server and the replays
(recording only), then every metric from the recordings.
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bench.alignment import TimedWord, WordErrors, word_errors
from bench.corpus import CLASSES, of_classes
from bench.metrics import (
    Distribution,
    Erasure,
    WordLatencies,
    distribution,
    erasure,
    final_words,
    word_latencies,
)
from bench.paths import RESULTS
from bench.recordings import (
    EVAL_LONGFORM_EN,
    Recording,
    default_wavs,
    load_recording,
    resolve_wavs,
)
from bench.reference import DecodeSettings, OfflineDecode, cached_decode, timed_reference
from bench.replay import Mode, Replay, replay
from bench.server import ServerHandle, ServerProcess, cpu_seconds, server_arguments
from bench.textnorm import normalise_words

FAST_REPLAY_ENV = {"INTERP_MAX_AUDIO_SPEED": "inf"}
"""Environment for a server started for a fast replay: lets audio arrive faster than real time
(the server refuses that by default)."""


@dataclass(frozen=True, slots=True)
class Goals:
    """Targets shown next to the measured numbers."""

    draft_latency_p50_s: float = 1.0
    final_latency_p50_s: float = 2.5
    wer_ratio_max: float = 1.15


@dataclass(frozen=True, slots=True)
class FileResult:
    """Every caption metric for one replayed recording."""

    recording: str
    audio_seconds: float
    reference: tuple[TimedWord, ...]
    errors: WordErrors
    offline_errors: WordErrors
    latencies: WordLatencies
    time_to_first_caption_s: float | None
    end_lag_s: float
    erasure: Erasure
    wall_seconds: float
    server_cpu_seconds: float | None
    draft_events: int
    final_events: int
    segments: int
    hypothesis: str
    offline_hypothesis: str

    @property
    def draft_latency(self) -> Distribution:
        return distribution(self.latencies.shown)

    @property
    def final_latency(self) -> Distribution:
        return distribution(self.latencies.final)

    @property
    def wer_ratio(self) -> float | None:
        return ratio(self.errors.wer, self.offline_errors.wer)

    @property
    def real_time_factor(self) -> float:
        return self.wall_seconds / self.audio_seconds

    @property
    def cpu_per_audio_second(self) -> float | None:
        if self.server_cpu_seconds is None:
            return None
        return self.server_cpu_seconds / self.audio_seconds


@dataclass(frozen=True, slots=True)
class Overall:
    """Metrics over all files: latency statistics over all words of all files, WER as total
    errors over total reference words, erasure and CPU as totals over totals, time to first
    caption and end lag as medians over files."""

    audio_seconds: float
    errors: WordErrors
    offline_errors: WordErrors
    draft_latency: Distribution
    final_latency: Distribution
    never_shown: int
    never_final: int
    time_to_first_caption: Distribution
    end_lag: Distribution
    erasure: Erasure
    wall_seconds: float
    server_cpu_seconds: float | None

    @property
    def wer_ratio(self) -> float | None:
        return ratio(self.errors.wer, self.offline_errors.wer)

    @property
    def real_time_factor(self) -> float:
        return self.wall_seconds / self.audio_seconds

    @property
    def cpu_per_audio_second(self) -> float | None:
        if self.server_cpu_seconds is None:
            return None
        return self.server_cpu_seconds / self.audio_seconds


def ratio(numerator: float, denominator: float) -> float | None:
    """``numerator / denominator``, or ``None`` when the denominator is zero or not a number."""
    if denominator != denominator or denominator == 0:  # NaN or zero
        return None
    return numerator / denominator


def measure_file(
    recording: Recording,
    reference: tuple[TimedWord, ...],
    offline: OfflineDecode,
    recorded: Replay,
) -> FileResult:
    """Compute every metric of one replay (pure: no I/O)."""
    updates = recorded.caption_updates()
    ref_words = [w.text for w in reference]
    hypothesis = final_words(updates)
    first_audio = recorded.schedule.send_times[0]
    return FileResult(
        recording=recording.id,
        audio_seconds=recording.duration,
        reference=reference,
        errors=word_errors(ref_words, hypothesis),
        offline_errors=word_errors(ref_words, normalise_words(offline.text)),
        latencies=word_latencies(reference, updates, recorded.schedule),
        time_to_first_caption_s=next(
            (u.arrival - first_audio for u in updates if u.text.strip()), None
        ),
        end_lag_s=recorded.ended_at - recorded.schedule.send_times[-1],
        erasure=erasure(updates),
        wall_seconds=recorded.ended_at - first_audio,
        server_cpu_seconds=recorded.server_cpu_seconds,
        draft_events=sum(u.state == "draft" for u in updates),
        final_events=sum(u.state == "final" for u in updates),
        segments=len({u.segment for u in updates}),
        hypothesis=" ".join(hypothesis),
        offline_hypothesis=offline.text,
    )


def overall(results: Sequence[FileResult]) -> Overall:
    """Aggregate per-file results (see :class:`Overall`)."""
    cpu = [r.server_cpu_seconds for r in results]
    zero = WordErrors(0, 0, 0, 0)
    return Overall(
        audio_seconds=sum(r.audio_seconds for r in results),
        errors=sum((r.errors for r in results), zero),
        offline_errors=sum((r.offline_errors for r in results), zero),
        draft_latency=distribution(v for r in results for v in r.latencies.shown),
        final_latency=distribution(v for r in results for v in r.latencies.final),
        never_shown=sum(r.latencies.never_shown for r in results),
        never_final=sum(r.latencies.never_final for r in results),
        time_to_first_caption=distribution(r.time_to_first_caption_s for r in results),
        end_lag=distribution(r.end_lag_s for r in results),
        erasure=sum((r.erasure for r in results), Erasure(0, 0)),
        wall_seconds=sum(r.wall_seconds for r in results),
        server_cpu_seconds=None if any(c is None for c in cpu) else sum(c or 0.0 for c in cpu),
    )


@dataclass(frozen=True, slots=True)
class RunSettings:
    """What ``python -m bench captions`` was asked to do."""

    wavs: tuple[Path, ...]
    mode: Mode
    out: Path
    url: str | None = None
    server_pid: int | None = None
    ready_timeout: float = 120.0
    decode: DecodeSettings = field(default_factory=DecodeSettings)

    @property
    def cache_dir(self) -> Path:
        return self.out / "cache"


@dataclass(frozen=True, slots=True)
class CaptionRun:
    """The replays of one benchmark run and the results measured from them."""

    results: tuple[FileResult, ...]
    replays: tuple[Replay, ...]
    server_url: str
    server_started: bool
    server_log: Path | None


async def run_captions(settings: RunSettings) -> CaptionRun:
    """Decode references (cached), replay every recording, then measure."""
    recordings = [load_recording(path) for path in settings.wavs]
    offline = [cached_decode(r, settings.decode, settings.cache_dir) for r in recordings]
    references = [timed_reference(r, o) for r, o in zip(recordings, offline, strict=True)]

    server: ServerProcess | None = None
    log_path: Path | None = None
    if settings.url is None:
        log_path = settings.out / f"server-captions-{settings.mode}.log"
        server = ServerProcess(log_path, env=FAST_REPLAY_ENV if settings.mode == "fast" else None)
        handle = await server.start(settings.ready_timeout)
    else:
        handle = ServerHandle(settings.url.rstrip("/"), settings.server_pid)
    try:
        clock = partial(cpu_seconds, handle.pid) if handle.pid is not None else None
        replays = [await replay(handle.base_url, r, settings.mode, clock) for r in recordings]
    finally:
        if server is not None:
            await server.stop()

    results = tuple(
        measure_file(rec, ref, off, rep)
        for rec, ref, off, rep in zip(recordings, references, offline, replays, strict=True)
    )
    return CaptionRun(
        results=results,
        replays=tuple(replays),
        server_url=handle.base_url,
        server_started=server is not None,
        server_log=log_path,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench captions", description=__doc__)
    server_arguments(parser)
    parser.add_argument("--mode", choices=("realtime", "fast"), default="realtime")
    parser.add_argument(
        "--files",
        nargs="+",
        metavar="FILE",
        help="WAV paths or recording ids in --eval-dir (default: every English long-form "
        "recording except *_SILVER and the *_concat file)",
    )
    parser.add_argument(
        "--classes",
        nargs="+",
        metavar="CLASS",
        help="instead of --files: every development recording of these speech classes "
        f"({', '.join(CLASSES)}, or all; bench/corpus.py), with a table per class",
    )
    parser.add_argument("--eval-dir", type=Path, default=EVAL_LONGFORM_EN)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--model", default="tiny.en", help="model of the offline baseline and reference times"
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m bench captions [options]``: replay, measure, write the report, print it."""
    from bench.report import write_report  # the report module builds on this one

    args = build_parser().parse_args(argv)
    if args.classes:
        wavs = [t.wav() for t in of_classes(args.classes)]
    elif args.files:
        wavs = resolve_wavs(args.files, args.eval_dir)
    else:
        wavs = default_wavs(args.eval_dir)
    if not wavs:
        print(f"no recordings found in {args.eval_dir}", file=sys.stderr)
        return 2
    settings = RunSettings(
        wavs=tuple(wavs),
        mode=args.mode,
        out=args.out,
        url=args.url,
        server_pid=args.server_pid,
        ready_timeout=args.ready_timeout,
        decode=DecodeSettings(model=args.model),
    )
    run = asyncio.run(run_captions(settings))
    command = shlex.join(["python", "-m", "bench", "captions", *argv])
    json_path, md_path, markdown = write_report(run, settings, Goals(), command)
    print(markdown)
    print(f"wrote {json_path} and {md_path}")
    return 0
