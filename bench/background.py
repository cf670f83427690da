"""What a background synthesis costs recognition, by how its thread is scheduled.

Whisper decodes a window of a real recording over and over (with a short rest between
decodes, as a live stream's steps have), first alone, then beside a Kokoro voice that
synthesises a sentence after another in a low-priority :class:`engine.workers.WorkerPool`:
once at ``nice`` (the pool's ``nice``, as ``INTERP_TTS_IDLE=0`` runs it) and once under
``SCHED_IDLE`` (``idle``, the default). The three conditions alternate ``--rounds`` times,
so a change of the machine's speed meanwhile touches each alike. The report gives each
condition's decode time, median and p95, and how many sentences Kokoro finished a second.
docs/metrics.md, "Natural voices / Synthesis on idle cores".

``python -m bench background [--model tiny.en] [--seconds 6] [--decodes 20] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.settings import Settings
from bench.metrics import percentile
from bench.recordings import EVAL_LONGFORM_EN, load_recording
from bench.resources import machine_info
from engine.audio import SAMPLE_RATE, decode_pcm16
from engine.workers import Below, WorkerPool
from models.catalog import resolve_whisper

DEFAULT_FILE = EVAL_LONGFORM_EN / "librivox_shakespeare_sonnet_001.wav"
SENTENCE = "El color de los cambios del jugo de col según la sustancia."
CONDITIONS = ("alone", "nice", "idle")
NICE = Settings().tts_nice
"""The nice value the ``nice`` condition runs Kokoro at: the server's (``tts_nice``)."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One condition's decodes in one round."""

    condition: str
    decode_s: tuple[float, ...]
    sentences_per_s: float


class _Synthesis:
    """Kokoro speaking one sentence after another in a pool of its own until stopped."""

    def __init__(self, kokoro: Any, pool: WorkerPool) -> None:
        self._kokoro = kokoro
        self._pool = pool
        self._stop = threading.Event()
        self.sentences = 0

    def _loop(self) -> None:
        from models.kokoro import DEFAULT_STYLES

        while not self._stop.is_set():
            self._kokoro.create(SENTENCE, DEFAULT_STYLES["es"], "es")
            self.sentences += 1

    def start(self) -> Any:
        return self._pool.start(self._loop)

    def stop(self) -> None:
        self._stop.set()


def _decodes(model: Any, audio: np.ndarray, count: int, rest_s: float) -> tuple[float, ...]:
    times = []
    for _ in range(count):
        began = time.perf_counter()
        segments, _info = model.transcribe(
            audio, beam_size=1, language="en", without_timestamps=True, vad_filter=False
        )
        list(segments)
        times.append(time.perf_counter() - began)
        time.sleep(rest_s)
    return tuple(times[1:])  # the first may still share the core with a pool starting


def run_condition(
    condition: str, model: Any, kokoro: Any, audio: np.ndarray, decodes: int, rest_s: float
) -> Sample:
    """Decode ``decodes`` times, with Kokoro beside at ``condition``'s priority."""
    if condition == "alone":
        return Sample(condition, _decodes(model, audio, decodes, rest_s), 0.0)
    below = Below(nice=NICE) if condition == "nice" else Below(idle=True)
    pool = WorkerPool("tts", threads=1, below=below)
    synthesis = _Synthesis(kokoro, pool)
    done = synthesis.start()
    began = time.perf_counter()
    try:
        times = _decodes(model, audio, decodes, rest_s)
    finally:
        synthesis.stop()
        elapsed = time.perf_counter() - began
        done.result()
        pool.shutdown()
    return Sample(condition, times, synthesis.sentences / elapsed)


def report(samples: Sequence[Sample]) -> list[str]:
    """One row per condition over all rounds."""
    rows = []
    for condition in CONDITIONS:
        mine = [s for s in samples if s.condition == condition]
        if not mine:
            continue
        times = [t for s in mine for t in s.decode_s]
        rate = statistics.mean(s.sentences_per_s for s in mine)
        shown = "–" if condition == "alone" else f"{rate:.2f}"
        rows.append(
            f"| {condition} | {len(times)} | {statistics.median(times):.3f} "
            f"| {percentile(times, 95):.3f} | {shown} |"
        )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench background", description=__doc__)
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--file", default=str(DEFAULT_FILE), help="a 16 kHz WAV")
    parser.add_argument("--seconds", type=float, default=6.0, help="audio a decode reads")
    parser.add_argument("--decodes", type=int, default=20, help="decodes per condition a round")
    parser.add_argument("--rest", type=float, default=0.15, help="seconds between decodes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="Whisper's and Kokoro's threads")
    args = parser.parse_args(argv)
    if sys.platform != "linux":
        raise SystemExit("SCHED_IDLE is Linux's: this bench runs on Linux only")
    from faster_whisper import WhisperModel

    from models.kokoro import load_model

    recording = load_recording(Path(args.file))
    if recording.sample_rate != SAMPLE_RATE:
        raise SystemExit(f"{args.file}: {recording.sample_rate} Hz, the bench takes 16 kHz")
    audio = decode_pcm16(recording.pcm)[: int(args.seconds * SAMPLE_RATE)]
    model = WhisperModel(
        resolve_whisper(args.model).model,
        device="cpu",
        compute_type="int8",
        cpu_threads=args.threads,
    )
    kokoro = load_model(threads=args.threads)
    samples = [
        run_condition(condition, model, kokoro, audio, args.decodes, args.rest)
        for _ in range(args.rounds)
        for condition in CONDITIONS
    ]
    machine = machine_info()
    print(
        f"Whisper {args.model} (int8, {args.threads} threads) decoding the first "
        f"{args.seconds:g} s of {recording.id} greedily, {args.rest:g} s apart, beside Kokoro "
        f"({args.threads} threads) speaking a sentence after another; {machine['cpu_model']}, "
        f"{machine['usable_cores']} usable cores; {args.rounds} rounds alternated\n\n"
        "| Kokoro beside | decodes | decode p50 s | decode p95 s | Kokoro sentences a second |\n"
        "|---|---|---|---|---|"
    )
    for row in report(samples):
        print(row)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
