"""Compute-unaware replay: the recogniser stepped every ``--step`` seconds of audio, in process.

Whatever the machine's load, each file is cut into the same steps, so the final WER of two
recogniser settings can be compared exactly (real-time runs move with load, since load changes
how much audio each step takes). No server and no wall clock: the latencies reported are
*audio-time* latencies, as if every decode took no time (each step's captions are dated at the
end of the audio it had heard), and so show what segmentation alone costs; the same per-word
rule as ``captions`` (docs/metrics.md) against the same reference word times. Real-time
latency adds the decodes and the queue for the worker: use ``captions`` for that.

``python -m bench steps [--step 0.5] [--set min_silence_s=0.4 ...] [--full-window-drafts]``
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

import numpy as np

from bench.alignment import WordErrors, word_errors
from bench.corpus import CLASSES, class_of, of_classes
from bench.metrics import CaptionUpdate, SendSchedule, distribution, word_latencies
from bench.paths import RESULTS
from bench.recordings import EVAL_LONGFORM_EN, load_recording, resolve_wavs
from bench.reference import DecodeSettings, cached_decode, timed_reference
from bench.sentence_breaks import SentenceBreaks, sentence_breaks
from bench.textnorm import normalise_words
from engine.audio import SAMPLE_RATE, decode_pcm16
from engine.events import Caption
from engine.recognition.asr import Decoded, DecodeOptions, Transcriber
from engine.recognition.config import RecognizerConfig
from engine.recognition.recognizer import StreamingRecognizer
from engine.recognition.vad import StreamingVad
from engine.workers import WorkerPool
from models.catalog import resolve_whisper, silero_vad_path
from models.silero import SileroModel
from models.whisper import FasterWhisperTranscriber


class TimedTranscriber:
    """The transcriber, with the wall time of each final's decode (a refine: in the full
    window, or with a beam where context is shed to the short window; drafts are greedy in
    the short window) kept apart by window and by whether it heard context (a prefix)."""

    KINDS = (
        ("full window with context", True, True),
        ("full window without", True, False),
        ("short window with context", False, True),
        ("short window without", False, False),
    )

    def __init__(self, inner: Transcriber) -> None:
        self.inner = inner
        self.name = inner.name
        self.multilingual = inner.multilingual
        self.finals: dict[tuple[bool, bool], list[float]] = {
            (full, context): [] for _, full, context in self.KINDS
        }

    def transcribe(self, audio: np.ndarray, options: DecodeOptions) -> Decoded:
        began = time.perf_counter()
        decoded = self.inner.transcribe(audio, options)
        if options.full_window or options.beam_size > 1:
            key = (options.full_window, bool(options.prefix))
            self.finals[key].append(time.perf_counter() - began)
        return decoded

    def report(self) -> str:
        """``finals' decodes, p50 / p95: full window with context N, p50 / p95 s; ...``."""
        parts = [
            f"{label} {len(times)}, {_p50_p95(times)} s" if times else f"{label} 0"
            for label, full, context in self.KINDS
            if (times := self.finals[(full, context)]) or full
        ]
        return "finals' decodes, p50 / p95: " + "; ".join(parts)


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


@dataclass(frozen=True, slots=True)
class Stepped:
    """One recording stepped through the recogniser: its caption events dated in audio time
    (``arrival`` = seconds of audio heard when the step that made them began) and the
    matching send schedule (chunk ``i`` = step ``i``, sent at the time its audio ends)."""

    updates: tuple[CaptionUpdate, ...]
    schedule: SendSchedule

    @property
    def text(self) -> str:
        finals = {u.segment: u.text for u in self.updates if u.state == "final"}
        return " ".join(finals[k] for k in sorted(finals))

    @property
    def segments(self) -> int:
        return len({u.segment for u in self.updates if u.state == "final"})


async def step_through(
    pcm: bytes,
    transcriber: Transcriber,
    vad: SileroModel,
    pool: WorkerPool,
    config: RecognizerConfig,
    step_s: float,
    terms: str = "",
) -> Stepped:
    """Feed ``pcm`` (16 kHz) in steps of ``step_s`` seconds, then finish; ``terms``: the
    session's terms as hint text (engine/terms.py)."""
    audio = decode_pcm16(pcm)
    counter = itertools.count()
    # Each step waits for its refine, as if decodes took no time.
    config = replace(config, refine_wait_s=None)
    recognizer = StreamingRecognizer(
        transcriber, StreamingVad(vad), pool.run, lambda: next(counter), config, terms=terms
    )
    updates: list[CaptionUpdate] = []
    ends: list[int] = []

    def record(events: Sequence[Caption], heard: int) -> None:
        for event in events:
            state: Literal["draft", "final"] = "final" if event.is_final else "draft"
            updates.append(CaptionUpdate(heard / SAMPLE_RATE, event.segment, state, event.text))

    hop = int(step_s * SAMPLE_RATE)
    for offset in range(0, len(audio), hop):
        heard = min(offset + hop, len(audio))
        recognizer.push(audio[offset:heard])
        ends.append(heard)
        record(await recognizer.step(), heard)
    record(await recognizer.finish(), len(audio))
    schedule = SendSchedule(SAMPLE_RATE, tuple(ends), tuple(e / SAMPLE_RATE for e in ends))
    return Stepped(tuple(updates), schedule)


@dataclass(slots=True)
class ClassTally:
    """One class's recordings stepped through: errors live and offline, word latencies."""

    live: WordErrors | None = None
    offline: WordErrors | None = None
    shown: list[float | None] = field(default_factory=list)
    final: list[float | None] = field(default_factory=list)
    breaks: SentenceBreaks | None = None
    files: int = 0

    def add(
        self,
        live: WordErrors,
        offline: WordErrors,
        shown: Sequence[float | None],
        final: Sequence[float | None],
        breaks: SentenceBreaks | None,
    ) -> None:
        self.live = live if self.live is None else self.live + live
        self.offline = offline if self.offline is None else self.offline + offline
        self.shown.extend(shown)
        self.final.extend(final)
        if breaks is not None:
            self.breaks = breaks if self.breaks is None else self.breaks + breaks
        self.files += 1

    def row(self, name: str) -> str:
        assert self.live is not None and self.offline is not None
        ratio = self.live.wer / self.offline.wer if self.offline.wer else float("nan")
        return (
            f"| {name} | {self.files} | {self.live.wer:.3f} | {self.offline.wer:.3f} | "
            f"{ratio:.2f} | {_p50_p95(self.shown)} | {_p50_p95(self.final)} | "
            f"{_breaks(self.breaks)} |"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench steps", description=__doc__)
    parser.add_argument("--files", nargs="+", metavar="FILE")
    parser.add_argument(
        "--classes",
        nargs="+",
        default=["read", "spontaneous"],
        metavar="CLASS",
        help=f"classes of the development set (bench/corpus.py): {', '.join(CLASSES)}, all "
        "(default: %(default)s; ignored with --files)",
    )
    parser.add_argument("--step", type=float, default=0.5, help="audio seconds per step")
    parser.add_argument("--show-text", action="store_true", help="print each file's finals")
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--model", default="tiny.en")
    parser.add_argument("--full-window-drafts", action="store_true")
    parser.add_argument("--cpu-threads", type=int, default=1, help="CTranslate2 threads a decode")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=RESULTS / "cache",
        help="offline decodes for the reference word times (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    config = config_with(args.set)
    if args.files:
        wavs = resolve_wavs(args.files, EVAL_LONGFORM_EN)
        tagged = [(wav, class_of(wav.stem) or "other", False) for wav in wavs]
    else:
        tagged = [(t.wav(), t.speech, t.punctuated) for t in of_classes(args.classes)]
    model = FasterWhisperTranscriber(
        resolve_whisper(args.model),
        short_window=not args.full_window_drafts,
        cpu_threads=args.cpu_threads,
    )
    model.warm()
    transcriber = TimedTranscriber(model)
    vad = SileroModel(silero_vad_path())
    pool = WorkerPool("asr")
    print(
        "| recording | class | WER | offline | segments | draft p50 / p95 s | final p50 / p95 s "
        "| spurious breaks / 100 words |\n|---|---|---|---|---|---|---|---|"
    )
    tallies: dict[str, ClassTally] = {}
    started = time.perf_counter()
    for wav, speech, punctuated in tagged:
        recording = load_recording(wav)
        if recording.sample_rate != SAMPLE_RATE:
            raise SystemExit(f"{wav}: {recording.sample_rate} Hz, the replay takes 16 kHz")
        stepped = asyncio.run(
            step_through(recording.pcm, transcriber, vad, pool, config, args.step)
        )
        offline = cached_decode(recording, DecodeSettings(), args.cache_dir)
        reference = timed_reference(recording, offline)
        latencies = word_latencies(reference, stepped.updates, stepped.schedule)
        said = normalise_words(recording.reference_text)
        errors = word_errors(said, normalise_words(stepped.text))
        offline_errors = word_errors(said, normalise_words(offline.text))
        breaks = sentence_breaks(recording.reference_text, stepped.text) if punctuated else None
        tallies.setdefault(speech, ClassTally()).add(
            errors, offline_errors, latencies.shown, latencies.final, breaks
        )
        print(
            f"| {recording.id} | {speech} | {errors.wer:.3f} | {offline_errors.wer:.3f} | "
            f"{stepped.segments} | {_p50_p95(latencies.shown)} | {_p50_p95(latencies.final)} | "
            f"{_breaks(breaks)} |",
            flush=True,
        )
        if args.show_text:
            print(f"\n> {stepped.text}\n")
    print(
        "\n| class | files | WER | offline | ratio | draft p50 / p95 s | final p50 / p95 s "
        "| spurious breaks / 100 words |\n|---|---|---|---|---|---|---|---|"
    )
    for name, tally in tallies.items():
        print(tally.row(name))
    print(
        f"\nsettings: step {args.step} s, {args.set or 'defaults'}; "
        f"{time.perf_counter() - started:.0f} s\n{transcriber.report()}"
    )
    pool.shutdown()
    return 0


def _breaks(breaks: SentenceBreaks | None) -> str:
    if breaks is None:
        return "–"
    return f"{breaks.per_100_words:.1f} ({breaks.spurious} of {breaks.hypothesis_breaks})"


def _p50_p95(values: Sequence[float | None]) -> str:
    dist = distribution(values)
    return f"{dist.p50:.2f} / {dist.p95:.2f}"
