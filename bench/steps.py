"""Compute-unaware replay: the recogniser stepped every ``--step`` seconds of audio, in process.

Whatever the machine's load, each file is cut into the same steps, so the final WER of two
recogniser settings can be compared exactly (real-time runs move with load, since load changes
how much audio each step takes). No server, no latency: use ``captions`` for those.

``python -m bench steps [--step 0.5] [--set min_silence_s=0.4 ...] [--full-window-drafts]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import fields, replace

import numpy as np

from bench.alignment import word_errors
from bench.recordings import EVAL_LONGFORM_EN, default_wavs, load_recording, resolve_wavs
from bench.textnorm import normalise_words
from engine.recognizer import RecognizerConfig, StreamingRecognizer
from engine.vad import SileroModel, StreamingVad
from engine.workers import WorkerPool
from models.catalog import resolve_whisper, silero_vad_path
from models.whisper import FasterWhisperTranscriber


def config_with(overrides: Sequence[str]) -> RecognizerConfig:
    """``["min_silence_s=0.4", "refine=false"]`` applied to the default config."""
    config = RecognizerConfig()
    known = {f.name for f in fields(RecognizerConfig)}
    changes: dict[str, object] = {}
    for item in overrides:
        name, _, text = item.partition("=")
        if name not in known:
            raise SystemExit(f"unknown RecognizerConfig field {name!r}")
        current = getattr(config, name)
        if isinstance(current, bool):
            changes[name] = text.lower() in ("1", "true", "yes")
        else:
            changes[name] = type(current)(text)
    return replace(config, **changes)  # type: ignore[arg-type]


async def final_text(
    pcm: bytes,
    transcriber: FasterWhisperTranscriber,
    vad: SileroModel,
    pool: WorkerPool,
    config: RecognizerConfig,
    step_s: float,
) -> tuple[str, int]:
    """The joined finals of one recording and how many segments it had."""
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    counter = itertools.count()
    recognizer = StreamingRecognizer(
        transcriber, StreamingVad(vad), pool.run, lambda: next(counter), config
    )
    finals: dict[int, str] = {}
    hop = int(step_s * 16000)
    for offset in range(0, len(audio), hop):
        recognizer.push(audio[offset : offset + hop])
        for event in await recognizer.step():
            if event.is_final:
                finals[event.segment] = event.text
    for event in await recognizer.finish():
        finals[event.segment] = event.text
    return " ".join(finals[k] for k in sorted(finals)), len(finals)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench steps", description=__doc__)
    parser.add_argument("--files", nargs="+", metavar="FILE")
    parser.add_argument("--step", type=float, default=0.5, help="audio seconds per step")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--full-window-drafts", action="store_true")
    args = parser.parse_args(argv)
    config = config_with(args.set)
    wavs = resolve_wavs(args.files, EVAL_LONGFORM_EN) if args.files else default_wavs()
    transcriber = FasterWhisperTranscriber(
        resolve_whisper(args.model), short_window=not args.full_window_drafts
    )
    transcriber.warm()
    vad = SileroModel(silero_vad_path())
    pool = WorkerPool("asr")
    print("| recording | WER | segments |\n|---|---|---|")
    total = None
    started = time.perf_counter()
    for wav in wavs:
        recording = load_recording(wav)
        text, segments = asyncio.run(
            final_text(recording.pcm, transcriber, vad, pool, config, args.step)
        )
        errors = word_errors(normalise_words(recording.reference_text), normalise_words(text))
        total = errors if total is None else total + errors
        print(f"| {recording.id} | {errors.wer:.3f} | {segments} |", flush=True)
    if total is not None:
        print(f"| **overall** | {total.wer:.3f} | |")
    print(
        f"\nsettings: step {args.step} s, {args.set or 'defaults'}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    pool.shutdown()
    return 0
